import type { Services } from '../../main.js';

/** Run an admin action against the configured database (migrating it first), then close it. */
export async function withServices<T>(action: (services: Services) => Promise<T>): Promise<T> {
  // Loaded here, not at the top: the client commands share this program and must not load the server.
  const [{ loadConfig }, { createServices }] = await Promise.all([import('../../config/config.js'), import('../../main.js')]);
  const config = loadConfig();
  const services = await createServices(config);
  try {
    return await action(services);
  } finally {
    await services.database.destroy();
  }
}

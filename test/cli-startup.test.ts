import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './helpers/cli.js';
import { cliUser, listen } from './helpers/cli-client.js';
import { TEST_DIALECT } from './helpers/database.js';
import { createTenant, startHarness, type Harness, type Tenant } from './helpers/harness.js';

/**
 * A module-loading hook given to the built CLI through NODE_OPTIONS: every module loaded through the ESM loader
 * (our dist files, and each package's entry) is appended to the file named by MAILROOM_TEST_MODULE_LOG. It is a
 * data: URL, so that nothing but the test's own text is needed to run it.
 */
const HOOKS = `import { appendFileSync } from 'node:fs';
export async function load(url, context, next) {
  appendFileSync(process.env.MAILROOM_TEST_MODULE_LOG, url + '\\n');
  return next(url, context);
}`;
const REGISTER = `import { register } from 'node:module'; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(HOOKS)}`)});`;
const NODE_OPTIONS = `--import=data:text/javascript,${encodeURIComponent(REGISTER)}`;

/** What only the server loads: its modules, and the packages only they use. */
const SERVER_MODULE = /\/dist\/(modules|db|transports|jobs|main\.js|config\/config\.js|lib\/logger\.js)|\/node_modules\/(fastify|@fastify|kysely|better-sqlite3|pg|nodemailer|smtp-server|mailauth|postal-mime|pino|piscina|dotenv|ipaddr\.js)\//;

describe(`the CLI client loads no server module (${TEST_DIALECT})`, () => {
  let h: Harness;
  let url: string;
  let acme: Tenant;
  const dir = mkdtempSync(join(tmpdir(), 'mailroom-modules-'));

  beforeAll(async () => {
    h = await startHarness();
    url = await listen(h.app);
    acme = await createTenant(h, 'Acme');
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await h.close();
  });

  let runs = 0;
  /** The modules a run of the built CLI loaded, and its result. */
  async function loaded(run: (env: Record<string, string>) => Promise<{ code: number | null; stderr: string }>) {
    const log = join(dir, `modules-${++runs}.txt`);
    const result = await run({ NODE_OPTIONS, MAILROOM_TEST_MODULE_LOG: log });
    const modules = readFileSync(log, 'utf8').split('\n').filter(Boolean);
    return { result, modules };
  }

  it('the hook sees what a server command loads (so that an empty finding below means something)', async () => {
    const { modules } = await loaded((env) => runCli(['migrate', '--json'], { ...env, MAILROOM_DATABASE_URL: `sqlite:${join(dir, 'probe.db')}` }));
    expect(modules.filter((m) => SERVER_MODULE.test(m)).length).toBeGreaterThan(10);
  });

  it('--help, a command against a server and its failure paths load only the client', async () => {
    const user = cliUser(url);
    expect((await user.login(acme.ownerEmail, acme.password)).code).toBe(0);
    const runs = [
      await loaded((env) => runCli(['--help'], env)),
      await loaded((env) => user.run(['mailboxes', 'list'], { env })),
      await loaded((env) => user.run(['whoami'], { env })),
      await loaded((env) => user.run(['messages', 'list', '--mailbox', 'nobody@mailroom.localhost'], { env })),
      await loaded((env) => runCli(['whoami'], { ...env, HOME: dir, XDG_CONFIG_HOME: join(dir, 'none') })),
      await loaded((env) => user.run(['messages', 'reply', 'msg_nope', '--body', 'x'], { env })),
      await loaded((env) => runCli(['help', 'messages', 'reply'], env)),
    ];
    for (const { modules } of runs) {
      expect(modules.some((m) => m.includes('/dist/cli/index.js'))).toBe(true);
      expect(modules.filter((m) => SERVER_MODULE.test(m))).toEqual([]);
    }
    expect(runs[1]!.result.code).toBe(0);
    expect(runs[2]!.result.code).toBe(0);
    // An answer loads its module only when it runs (and then no server module either).
    expect(runs[5]!.result.stderr).toBe('error: 404 message_not_found: no message msg_nope\n');
    expect(runs[5]!.modules.some((m) => m.endsWith('/dist/cli/client/reply.js'))).toBe(true);
    expect(runs[1]!.modules.some((m) => m.endsWith('/dist/cli/client/reply.js'))).toBe(false);
  });
});

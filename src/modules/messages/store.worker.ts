/**
 * Entry of the smtp role's store thread (see store-thread.ts): its own services and database
 * connection, storing the analysed deliveries the SMTP thread sends it. Runs in a worker thread only.
 * As its thread's entry point it composes like main.ts does, with the same createServices (decision 223).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { createLogger } from '../../lib/logger.js';
import { createServices } from '../../services.js';
import { reviveDelivery, type StoreReply, type StoreRequest, type StoreWorkerData } from './store-thread.js';

const settings = workerData as StoreWorkerData;
const port = parentPort!;
const reply = (message: StoreReply) => port.postMessage(message);

const logger = createLogger(settings.config.logLevel);
async function open() {
  try {
    // The starting thread has migrated the database already.
    return await createServices(settings.config, { migrate: false, logger, writeLock: settings.writeLock ?? undefined });
  } catch (err) {
    reply({ failed: err instanceof Error ? err.message : String(err) });
    // Ends this thread only; a loader left running (tsx from source) would otherwise keep it alive.
    process.exit(1);
  }
}
const services = await open();
// A worker role runs in the starting thread: wake it for the jobs these deliveries enqueue.
services.wakeups.subscribe((queue) => reply({ wake: queue }));

const underway = new Set<Promise<unknown>>();

port.on('message', (request: StoreRequest) => {
  if ('close' in request) {
    void (async () => {
      await Promise.allSettled([...underway]);
      await services.analyzer.close();
      await services.database.destroy();
      // The starting thread waits for this thread to exit.
      port.close();
    })();
    return;
  }
  // A delivery that cannot even be read back fails alone, as a rejected promise, never as a crash of the thread.
  const stored = Promise.resolve()
    .then(() => services.inbound.store(reviveDelivery(request.delivery)))
    .then(
      (ids) => reply({ id: request.id, ids }),
      (err: unknown) => {
        logger.error({ err }, 'storing inbound mail failed');
        reply({ id: request.id, error: err instanceof Error ? err.message : String(err) });
      },
    );
  underway.add(stored);
  void stored.finally(() => underway.delete(stored));
});
reply({ ready: true });

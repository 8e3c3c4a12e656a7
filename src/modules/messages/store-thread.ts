import type { Worker } from 'node:worker_threads';
import type { Config } from '../../config/config.js';
import type { WriteLock } from '../../db/write-lock.js';
import type { Logger } from '../../lib/logger.js';
import { asBuffer, startWorkerThread } from '../../lib/thread-pool.js';
import type { AnalyzedDelivery, DeliveryStore } from './inbound.service.js';

/** What the store thread is started with. */
export interface StoreWorkerData {
  config: Config;
  /** SQLite: the write lock of the starting thread's database handle, shared with the thread's own handle. */
  writeLock: SharedArrayBuffer | null;
}

/** Main thread → store thread. */
export type StoreRequest = { id: number; delivery: AnalyzedDelivery } | { close: true };
/** Store thread → main thread. */
export type StoreReply = { ready: true } | { failed: string } | { id: number; ids: string[] } | { id: number; error: string } | { wake: string };

/** Structured clone turns Buffers into plain Uint8Arrays; the store wants Buffers back. */
export function reviveDelivery(delivery: AnalyzedDelivery): AnalyzedDelivery {
  for (const attachment of delivery.analysis.parsed.attachments) attachment.content = asBuffer(attachment.content);
  return { ...delivery, raw: asBuffer(delivery.raw) };
}

export interface StoreThread extends DeliveryStore {
  /** The running thread's id, or null before it started and after it stopped. */
  readonly threadId: number | null;
  /**
   * Start the thread now (the smtp role does, before it listens) and resolve once it can store: its modules
   * are loaded and its database is open. Rejects if it cannot start. Otherwise the first delivery starts it.
   */
  start(): Promise<void>;
  /** Let the deliveries under way finish, then stop the thread. */
  close(): Promise<void>;
  /** Stop the thread at once, as a crash would: the deliveries it holds fail, and the next delivery starts a new thread. */
  terminate(): Promise<void>;
}

interface Pending {
  resolve: (ids: string[]) => void;
  reject: (err: Error) => void;
}

/** How long close() waits for the thread to finish its deliveries and close its database. */
const CLOSE_TIMEOUT_MS = 15_000;

/**
 * The smtp role's store thread: a worker thread with its own services and database connection that
 * stores analysed deliveries (threads, copies, counters, `message.received`) through its own group
 * commit, so that the thread speaking SMTP never waits for a transaction or an fsync. `start()` starts it;
 * a delivery that finds none (the first, or the first after a crash) starts one. Job wake-ups it causes
 * (a webhook delivery enqueued by `message.received`) are passed to `onWake` here, for a worker role of
 * this process. If the thread dies, the deliveries it held fail
 * (SMTP 451, so their senders retry: nothing acknowledged is lost) and the next delivery starts a new one.
 */
export function createStoreThread(options: { config: Readonly<Config>; writeLock: WriteLock | null; logger: Logger; onWake: (queue: string) => void }): StoreThread {
  const { logger } = options;
  const pending = new Map<number, Pending>();
  let worker: Worker | null = null;
  /** Settles when the running thread is ready (or failed to be). */
  let ready: Promise<void> = Promise.resolve();
  let next = 0;
  let closing: Promise<void> | null = null;

  function fail(err: Error): void {
    for (const waiting of pending.values()) waiting.reject(err);
    pending.clear();
  }

  function start(): Worker {
    const workerData: StoreWorkerData = { config: { ...options.config }, writeLock: options.writeLock?.buffer ?? null };
    const started = startWorkerThread(import.meta.url, 'store.worker', { workerData });
    /** Whether it said it was ready (its first message); a thread that stops before that could not start. */
    let running = false;
    ready = new Promise<void>((resolve, reject) => {
      let failure: string | null = null;
      started.once('message', (reply: StoreReply) => {
        if ('failed' in reply) {
          failure = reply.failed;
          return;
        }
        running = true;
        resolve();
      });
      // Settled once the thread is gone, so that a failed start leaves no thread behind.
      started.once('exit', (code) => reject(new Error(failure ? `the inbound store thread could not start: ${failure}` : `the inbound store thread stopped while starting (exit code ${code})`)));
    });
    // Whoever waits for it sees the failure; a delivery that started the thread sees its own.
    ready.catch(() => undefined);
    started.on('message', (reply: StoreReply) => {
      if ('wake' in reply) {
        options.onWake(reply.wake);
        return;
      }
      if (!('id' in reply)) return;
      const waiting = pending.get(reply.id);
      pending.delete(reply.id);
      if ('ids' in reply) waiting?.resolve(reply.ids);
      else waiting?.reject(new Error(`the store thread could not store the message: ${reply.error}`));
    });
    started.on('error', (err) => logger.error({ err }, 'inbound store thread failed'));
    started.on('exit', (code) => {
      if (worker === started) worker = null;
      if (closing) return;
      if (running) {
        logger.error({ code }, 'inbound store thread stopped; its deliveries under way get 451 and the next delivery starts a new thread');
        // It may have died holding the write lock, or waiting in line for it: nobody else would ever get it.
        options.writeLock?.abandon();
      } else {
        // It wrote nothing before it was ready, so it never took a ticket of the write lock.
        logger.error({ code }, 'inbound store thread could not start; its deliveries get 451 and the next delivery tries again');
      }
      fail(new Error('the store thread stopped'));
    });
    return started;
  }

  return {
    get threadId() {
      return worker?.threadId ?? null;
    },
    start() {
      worker ??= start();
      return ready;
    },
    store(delivery) {
      if (closing) return Promise.reject(new Error('the store thread is closing'));
      worker ??= start();
      const id = ++next;
      const target = worker;
      return new Promise<string[]>((resolve, reject) => {
        pending.set(id, { resolve, reject });
        const request: StoreRequest = { id, delivery };
        target.postMessage(request);
      });
    },
    close() {
      closing ??= (async () => {
        const running = worker;
        if (!running) return;
        const exited = new Promise<void>((resolve) => running.once('exit', () => resolve()));
        const request: StoreRequest = { close: true };
        running.postMessage(request);
        const timer = setTimeout(() => void running.terminate(), CLOSE_TIMEOUT_MS);
        await exited;
        clearTimeout(timer);
        fail(new Error('the store thread stopped'));
      })();
      return closing;
    },
    async terminate() {
      await worker?.terminate();
    },
  };
}

import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker, type WorkerOptions } from 'node:worker_threads';
import { Piscina } from 'piscina';
import type { Logger } from './logger.js';

/** Bytes that came through structured clone (a plain Uint8Array) as a Buffer over the same memory. */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

export interface ThreadPoolOptions<T, R> {
  /** `import.meta.url` of the module next to which the worker module lives. */
  near: string;
  /** The worker module's name without extension (`analysis.worker`): .js when built, .ts from source. */
  worker: string;
  threads: number;
  /** Tasks one thread works on at once (more than one when tasks wait on I/O). */
  tasksPerThread: number;
  workerData?: unknown;
  /** What the threads do, for the log (`analysis`, `DKIM signing`). */
  what: string;
  logger: Logger;
  /** The same work in the calling thread: after close(), and when the pool cannot run a task (a thread died). */
  inProcess: (task: T) => Promise<R>;
  /** Turn what came back through structured clone into what callers expect (Uint8Array → Buffer). */
  revive?: (result: R) => R;
}

export interface ThreadPool<T, R> {
  run(task: T): Promise<R>;
  /** Stop the threads; further tasks run in the calling thread. */
  close(): Promise<void>;
}

/** The worker entry next to `near`; from source (tests, tsx) it needs tsx's loader. Built, the threads inherit the process's flags (e.g. --cpu-prof). */
function workerEntry(near: string, worker: string): { filename: string; execArgv?: string[] } {
  const here = fileURLToPath(near);
  const fromSource = here.endsWith('.ts');
  const filename = here.replace(/[^/\\]+\.(ts|js)$/, `${worker}.${fromSource ? 'ts' : 'js'}`);
  return fromSource ? { filename, execArgv: [...process.execArgv, '--import', 'tsx'] } : { filename };
}

/**
 * A worker thread running the module `worker` next to `near`. Built, that is the module itself. From
 * source, a Worker given a .ts file fails before any `--import` loader applies, so the thread first
 * registers tsx's loader, then imports the module (piscina's own entry does the same for its pools).
 */
export function startWorkerThread(near: string, worker: string, options: WorkerOptions): Worker {
  const entry = workerEntry(near, worker);
  if (!entry.execArgv) return new Worker(entry.filename, options);
  const source = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(pathToFileURL(entry.filename).href)}); })`;
  return new Worker(source, { ...options, eval: true });
}

/**
 * CPU-heavy work (MIME analysis, DKIM signatures) on a piscina pool of worker threads, so that the
 * thread speaking SMTP or HTTP and writing the database spends no time on it. The threads start with the
 * first task. A task the pool cannot run is done in the calling thread instead, so no mail is refused
 * or held back for it.
 */
export function createThreadPool<T, R>(options: ThreadPoolOptions<T, R>): ThreadPool<T, R> {
  let pool: Piscina<T, R> | null = null;
  let closed = false;

  function start(): Piscina<T, R> {
    const entry = workerEntry(options.near, options.worker);
    const created = new Piscina<T, R>({
      filename: entry.filename,
      ...(entry.execArgv ? { execArgv: entry.execArgv } : {}),
      minThreads: options.threads,
      maxThreads: options.threads,
      concurrentTasksPerWorker: options.tasksPerThread,
      // Tasks may await I/O (DNS): the threads' event loops must run between and during tasks.
      atomics: 'disabled',
      // Piscina records every task's wait and run time in histograms by default; nothing reads them, and
      // recording cost about 35 µs of the calling thread per task (measured with a 10 KB analysis).
      recordTiming: false,
      idleTimeout: Number.POSITIVE_INFINITY,
      workerData: options.workerData,
    });
    created.on('error', (err: unknown) => options.logger.error({ err }, `${options.what} thread failed`));
    return created;
  }

  return {
    async run(task) {
      if (closed) return options.inProcess(task);
      pool ??= start();
      try {
        const result = await pool.run(task);
        return options.revive ? options.revive(result) : result;
      } catch (err) {
        options.logger.error({ err }, `${options.what} thread failed; doing the work in the calling thread`);
        return options.inProcess(task);
      }
    },
    async close() {
      closed = true;
      const running = pool;
      pool = null;
      if (running) await running.destroy();
    },
  };
}

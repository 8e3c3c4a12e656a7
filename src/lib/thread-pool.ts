import { dirname, join } from 'node:path';
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
  /**
   * A time limit per task, counted from when a thread takes it, with the answer for a task that passes it.
   * Its thread is then stopped (a task stuck in CPU work cannot be interrupted otherwise) and replaced; the
   * other tasks it was running are run again, and the late task never is (it would stop the next thread too).
   */
  timeLimit?: { ms: number; onTimeout: (task: T) => R };
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
  const filename = join(dirname(here), `${worker}.${fromSource ? 'ts' : 'js'}`);
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

  /**
   * Tasks handed to the threads at once when there is a time limit: no more than they run side by side, so
   * that a task's time starts when a thread takes it; the others wait here, in order.
   */
  const capacity = options.threads * options.tasksPerThread;
  let running = 0;
  const waiting: Array<() => void> = [];

  async function runWithin(task: T, limit: NonNullable<ThreadPoolOptions<T, R>['timeLimit']>, retried = false): Promise<R> {
    if (closed || !pool) return options.inProcess(task);
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new Error(`${options.what} task passed its time limit of ${limit.ms} ms`)), limit.ms);
    try {
      const result = await pool.run(task, { signal: controller.signal });
      return options.revive ? options.revive(result) : result;
    } catch (err) {
      if (controller.signal.aborted) {
        options.logger.warn({ limitMs: limit.ms }, `${options.what} task passed its time limit; its thread is replaced and its result given up`);
        return limit.onTimeout(task);
      }
      // Most often its thread was stopped for another task's time limit: this task is not at fault.
      if (!retried) return runWithin(task, limit, true);
      options.logger.error({ err }, `${options.what} thread failed; doing the work in the calling thread`);
      return options.inProcess(task);
    } finally {
      clearTimeout(timer);
    }
  }

  return {
    async run(task) {
      if (closed) return options.inProcess(task);
      pool ??= start();
      const limit = options.timeLimit;
      if (limit) {
        // A finishing task hands its place straight to the first waiting one.
        if (running < capacity) running += 1;
        else await new Promise<void>((resolve) => waiting.push(resolve));
        try {
          return await runWithin(task, limit);
        } finally {
          const next = waiting.shift();
          if (next) next();
          else running -= 1;
        }
      }
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

import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { threadId, Worker, type WorkerOptions } from 'node:worker_threads';
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
   * A time limit per task, counted from when a thread takes it, with the answer for a task that passes it. A
   * thread stuck in one task's CPU work (which cannot be interrupted otherwise) is stopped and replaced, and
   * the tasks it held run again alone, where one past its limit gets `onTimeout` (see createTimedRunner).
   * The worker module's task function must then be wrapped in `timedTask`.
   */
  timeLimit?: { ms: number; onTimeout: (task: T) => R };
}

/** What a pool with a time limit posts: the task, and the slot (TaskSlot) its thread keeps up to date while running it. */
export interface TimedTask<T> {
  task: T;
  slot: SharedArrayBuffer;
}

/**
 * A timed task's shared slot: [0] the id of the thread that started it (0 before), [1] that thread's last
 * heartbeat (Date.now()), which stops moving while the thread is stuck in CPU work.
 */
type TaskSlot = Float64Array;
const SLOT_BYTES = 2 * Float64Array.BYTES_PER_ELEMENT;

/** How often a thread running timed tasks beats, and how often a pool looks at its timed tasks. */
const HEARTBEAT_MS = 100;
/** A thread whose heartbeat is older than this is stuck: its tasks are moved and it is replaced. */
export const STALL_MS = 2000;
/** How long a thread of the one-task-per-thread pool (below) is kept without work. */
const ALONE_IDLE_MS = 30_000;

/** The slots of the timed tasks this thread is running (in a worker thread). */
const beating = new Set<TaskSlot>();
let heartbeat: NodeJS.Timeout | null = null;

/**
 * A worker module's task function for a pool with a time limit: it tells the pool which thread runs the
 * task and keeps beating while the thread's event loop turns (piscina says neither), so that the pool
 * can stop a thread stuck in one task's CPU work.
 */
export function timedTask<T, R>(run: (task: T) => Promise<R>): (posted: TimedTask<T>) => Promise<R> {
  return async (posted) => {
    const slot: TaskSlot = new Float64Array(posted.slot);
    slot[1] = Date.now();
    slot[0] = threadId;
    beating.add(slot);
    heartbeat ??= setInterval(() => {
      const now = Date.now();
      for (const beat of beating) beat[1] = now;
    }, HEARTBEAT_MS).unref();
    try {
      return await run(posted.task);
    } finally {
      beating.delete(slot);
    }
  };
}

export interface ThreadPool<T, R> {
  run(task: T): Promise<R>;
  /** Tasks waiting for a thread now, and threads replaced since start (stuck, or died): for metrics. */
  stats(): { queued: number; restarts: number };
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
  // Posted tasks are T, or TimedTask<T> with a time limit.
  let pool: Piscina<unknown, R> | null = null;
  let closed = false;
  const counts = { restarts: 0 };
  const onRestart = () => void (counts.restarts += 1);
  const start = () => startPiscina<R>(options, options.threads, options.tasksPerThread, Number.POSITIVE_INFINITY, onRestart);
  const timed = options.timeLimit ? createTimedRunner(options, () => (closed ? null : (pool ??= start())), onRestart) : null;

  return {
    async run(task) {
      if (closed) return options.inProcess(task);
      if (timed) return timed.run(task);
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
      await Promise.all([running?.destroy(), timed?.close()]);
    },
    stats: () => ({ queued: (pool?.queueSize ?? 0) + (timed?.queued() ?? 0), restarts: counts.restarts }),
  };
}

/** A piscina pool of the worker module; with an idle time, its threads start on demand and stop when idle. */
function startPiscina<R>(
  options: Pick<ThreadPoolOptions<unknown, R>, 'near' | 'worker' | 'workerData' | 'what' | 'logger'>,
  threads: number,
  perThread: number,
  idleMs = Number.POSITIVE_INFINITY,
  onThreadDied?: () => void,
): Piscina<unknown, R> {
  const entry = workerEntry(options.near, options.worker);
  const created = new Piscina<unknown, R>({
    filename: entry.filename,
    ...(entry.execArgv ? { execArgv: entry.execArgv } : {}),
    minThreads: idleMs === Number.POSITIVE_INFINITY ? threads : 0,
    maxThreads: threads,
    concurrentTasksPerWorker: perThread,
    // Tasks may await I/O (DNS): the threads' event loops must run between and during tasks.
    atomics: 'disabled',
    // Piscina records every task's wait and run time in histograms by default; nothing reads them, and
    // recording costs the calling thread time on every task (decision 180; bench/HISTORY.md).
    recordTiming: false,
    idleTimeout: idleMs,
    workerData: options.workerData,
  });
  created.on('error', (err: unknown) => {
    onThreadDied?.();
    options.logger.error({ err }, `${options.what} thread failed`);
  });
  return created;
}

/** A timed task under way, as the pool watches it. */
interface Watched {
  slot: TaskSlot;
  /** When the pool first saw it running (to within HEARTBEAT_MS). */
  startedAt: number | null;
  /** Its thread was stopped: run it again alone. */
  moved: boolean;
}

/**
 * Timed tasks (ThreadPoolOptions.timeLimit). They share the pool's threads; a thread whose heartbeat
 * stops for STALL_MS, or with a task past its limit, is stopped (piscina starts another) and every task
 * it held is run again alone, on a thread of its own, under its time limit: which of them held the CPU
 * cannot be told, and the ones that did not finish at once there. Piscina can give a task an AbortSignal,
 * but then runs nothing else on its thread, which tasks waiting on DNS need.
 */
function createTimedRunner<T, R>(options: ThreadPoolOptions<T, R>, shared: () => Piscina<unknown, R> | null, onRestart: () => void) {
  const limit = options.timeLimit!;
  const watched = new Set<Watched>();
  let watch: NodeJS.Timeout | null = null;
  let alone: Piscina<unknown, R> | null = null;
  const revive = (result: R) => (options.revive ? options.revive(result) : result);

  /** Stop every thread with a task stalled or past its limit, and mark the tasks it held to be run again alone. */
  function stopStuck(): void {
    const now = Date.now();
    const stuck = new Set<number>();
    for (const task of watched) {
      const thread = task.slot[0]!;
      if (thread === 0 || task.moved) continue;
      task.startedAt ??= now;
      if (now - task.slot[1]! > STALL_MS || now - task.startedAt > limit.ms) stuck.add(thread);
    }
    if (stuck.size === 0) return;
    for (const task of watched) if (stuck.has(task.slot[0]!)) task.moved = true;
    options.logger.warn({ threads: [...stuck] }, `${options.what} thread stuck; it is replaced and its tasks run again one per thread`);
    for (const worker of shared()?.threads ?? []) {
      if (!stuck.has(worker.threadId)) continue;
      onRestart();
      void worker.terminate();
    }
  }

  return {
    async run(task: T): Promise<R> {
      const pool = shared();
      if (!pool) return options.inProcess(task);
      const watching: Watched = { slot: new Float64Array(new SharedArrayBuffer(SLOT_BYTES)), startedAt: null, moved: false };
      watched.add(watching);
      watch ??= setInterval(stopStuck, HEARTBEAT_MS).unref();
      try {
        const posted: TimedTask<T> = { task, slot: watching.slot.buffer as SharedArrayBuffer };
        return revive(await pool.run(posted));
      } catch (err) {
        // Moved, or given to the stopped thread before it could start it (or its thread failed otherwise): once more, alone.
        if (shared()) {
          alone ??= startPiscina(options, options.tasksPerThread, 1, ALONE_IDLE_MS);
          return await runAlone(alone, task, options).catch((failed: unknown) => failedThread(failed, task));
        }
        return failedThread(err, task);
      } finally {
        watched.delete(watching);
        if (watched.size === 0 && watch) {
          clearInterval(watch);
          watch = null;
        }
      }
    },
    async close(): Promise<void> {
      const running = alone;
      alone = null;
      await running?.destroy();
    },
    /** Tasks waiting for a thread of their own. */
    queued: () => alone?.queueSize ?? 0,
  };

  function failedThread(err: unknown, task: T): Promise<R> {
    options.logger.error({ err }, `${options.what} thread failed; doing the work in the calling thread`);
    return options.inProcess(task);
  }
}

/**
 * One task on a thread of its own (`alone`: one task per thread), under the time limit counted from when the
 * thread takes it (a new thread takes a while to start). Piscina stops the thread of an aborted task.
 */
async function runAlone<T, R>(alone: Piscina<unknown, R>, task: T, options: ThreadPoolOptions<T, R>): Promise<R> {
  const limit = options.timeLimit!;
  const slot: TaskSlot = new Float64Array(new SharedArrayBuffer(SLOT_BYTES));
  const abort = new AbortController();
  let startedAt: number | null = null;
  const timer = setInterval(() => {
    if (slot[0] !== 0) startedAt ??= Date.now();
    if (startedAt !== null && Date.now() - startedAt > limit.ms) abort.abort();
  }, HEARTBEAT_MS);
  try {
    const posted: TimedTask<T> = { task, slot: slot.buffer as SharedArrayBuffer };
    const result = await alone.run(posted, { signal: abort.signal });
    return options.revive ? options.revive(result) : result;
  } catch (err) {
    if (!abort.signal.aborted) throw err;
    options.logger.warn({ limitMs: limit.ms }, `${options.what} task passed its time limit; its result is given up`);
    return limit.onTimeout(task);
  } finally {
    clearInterval(timer);
  }
}

import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { asWork } from '../../src/db/tables.js';
import { fileURLToPath } from 'node:url';
import type { Db } from '../../src/db/database.js';
import type { JobTable } from '../../src/jobs/job.table.js';
import type { Queue } from '../../src/jobs/queue.js';
import type { JobHandler } from '../../src/jobs/worker.js';
import type { EventsService } from '../../src/modules/events/events.service.js';

/** A queue name no other test in the file uses, so tests sharing one database never see each other's jobs. */
export function uniqueQueue(prefix = 'q'): string {
  return `${prefix}-${Math.random().toString(36).slice(2, 10)}`;
}

export async function jobRow(db: Db, id: string): Promise<JobTable | undefined> {
  return db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function jobsOf(db: Db, queue: string): Promise<JobTable[]> {
  return db.selectFrom('jobs').selectAll().where('queue', '=', queue).orderBy('id').execute();
}

/** Payload of the jobs run by `effectHandler`. */
export interface EffectPayload {
  n: number;
  /** The fixture's handler never finishes this job (it stands for a worker that hangs or dies mid-job). */
  block?: boolean;
}

export interface EffectRun {
  jobId: string;
  n: number;
  attempt: number;
  interrupted: boolean;
}

/**
 * The handler the crash test runs in both processes: its effect (an event row carrying `n`) and the
 * job's completion commit in one transaction, outbox style, so each job's effect exists exactly once
 * when every job has been completed.
 */
export function effectHandler(deps: {
  queue: string;
  jobs: Queue;
  db: Db;
  events: EventsService;
  concurrency: number;
  /** Called as each run starts, before any work. */
  onRun?: (run: EffectRun) => void;
  /** Never settle jobs whose payload has `block` (the child process only). */
  hangOnBlock?: boolean;
  workMs?: number;
}): JobHandler<EffectPayload> {
  return {
    queue: deps.queue,
    concurrency: deps.concurrency,
    backoff: { baseMs: 50, factor: 1, capMs: 50, jitter: 0 },
    async handle(job) {
      deps.onRun?.({ jobId: job.id, n: job.payload.n, attempt: job.attempt, interrupted: job.interrupted });
      if (deps.hangOnBlock === true && job.payload.block === true) await new Promise<never>(() => undefined);
      if (deps.workMs) await new Promise((resolve) => setTimeout(resolve, deps.workMs));
      const workspaceId = job.workspaceId;
      if (workspaceId === null) throw new Error('effect jobs carry a workspace');
      await deps.db.transaction().execute(async (trx) => {
        await deps.events.emit(asWork(trx), { workspaceId, type: 'message.received', data: { n: job.payload.n, job_id: job.id } });
        if (!(await deps.jobs.complete(job, asWork(trx)))) throw new Error('lease lost');
      });
      return { type: 'done' };
    },
  };
}

export const FIXTURE_PATH = fileURLToPath(new URL('../fixtures/queue-worker.ts', import.meta.url));

/** A line of JSON the fixture printed. */
export type FixtureMessage = Record<string, unknown> & { event: string };

/** The fixture running in a child process: its parsed stdout lines, and waits that never hang. */
export interface FixtureProcess {
  child: ChildProcessWithoutNullStreams;
  messages: FixtureMessage[];
  /** Resolve with the first message (already seen or still to come) matching; reject on timeout or exit. */
  waitFor(predicate: (m: FixtureMessage) => boolean, timeoutMs: number): Promise<FixtureMessage>;
  /** SIGKILL (no clean-up runs in the child) and wait until it is gone. */
  kill(): Promise<void>;
  /** Wait for a normal exit; reject on timeout. */
  exited(timeoutMs: number): Promise<number | null>;
  stderr(): string;
}

export function spawnFixture(env: Record<string, string>): FixtureProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE_PATH], {
    env: { ...process.env, MAILROOM_LOG_LEVEL: 'silent', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const messages: FixtureMessage[] = [];
  const listeners = new Set<() => void>();
  let stderr = '';
  let buffered = '';
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    buffered += chunk;
    let newline: number;
    while ((newline = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, newline).trim();
      buffered = buffered.slice(newline + 1);
      if (line.startsWith('{')) messages.push(JSON.parse(line) as FixtureMessage);
    }
    for (const listener of [...listeners]) listener();
  });
  child.stderr.on('data', (chunk: string) => {
    stderr += chunk;
  });
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.once('exit', () => {
    for (const listener of [...listeners]) listener();
  });

  return {
    child,
    messages,
    waitFor(predicate, timeoutMs) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = messages.find(predicate);
          if (found) finish(() => resolve(found));
          else if (child.exitCode !== null || child.signalCode !== null) {
            finish(() => reject(new Error(`fixture exited (${child.exitCode ?? child.signalCode}) first; stderr: ${stderr}`)));
          }
        };
        const timer = setTimeout(() => finish(() => reject(new Error(`fixture: no such message within ${timeoutMs} ms; stderr: ${stderr}`))), timeoutMs);
        function finish(settle: () => void) {
          clearTimeout(timer);
          listeners.delete(check);
          settle();
        }
        listeners.add(check);
        check();
      });
    },
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exit;
    },
    async exited(timeoutMs) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`fixture did not exit within ${timeoutMs} ms; stderr: ${stderr}`)), timeoutMs);
      });
      try {
        return await Promise.race([exit, timeout]);
      } finally {
        clearTimeout(timer);
      }
    },
    stderr: () => stderr,
  };
}

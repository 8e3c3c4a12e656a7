import type { DialectInfo } from '../../db/dialect.js';
import { giveBackPages, rebuildIncremental, sqliteStorage, type SqliteStorage } from '../../db/sqlite-storage.js';
import type { Work } from '../../db/tables.js';
import type { Queue } from '../../jobs/queue.js';
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import type { EventStore } from '../events/event.store.js';
import type { MailStore } from '../mail/mail.store.js';
import type { ExpiredMessage, PeriodGroup, RetentionFolder } from '../mail/retention.store.js';
import type { ServiceTokenStore } from '../transactional/service-token.store.js';
import type { WebhookStore } from '../webhooks/webhook.store.js';
import type { RetentionPolicy } from './retention.service.js';

const DAY_MS = 86_400_000;
const FOLDERS: readonly RetentionFolder[] = ['trash', 'spam'];
/** SQLite: free pages given back to the file system per transaction (2 MiB of 4 KiB pages, well under 100 ms). */
const PAGES_PER_GIVE_BACK = 512;
/**
 * Days the mail store's expunge log keeps a removed UID for mail clients' QRESYNC (VANISHED). A client that was
 * away longer learns of older removals from the UIDs it knows and no longer sees (VANISHED (EARLIER) by gaps).
 */
export const EXPUNGE_LOG_DAYS = 30;

/** What one sweep removed, and how long its longest transaction was. */
export interface SweepReport {
  messages: number;
  events: number;
  webhookAttempts: number;
  deadJobs: number;
  idempotencyKeys: number;
  /** Expunge-log rows (removed UIDs) past EXPUNGE_LOG_DAYS. */
  expunged: number;
  /** Transactions (each at most one batch) the sweep ran. */
  batches: number;
  /** The longest time one batch held its transaction, in milliseconds (messages, records or free pages). */
  longestBatchMs: number;
  /** The same, of the batches of messages alone. */
  longestMessageBatchMs: number;
  /** SQLite: pages given back to the file system. */
  pagesFreed: number;
}

export interface RetentionSweep {
  /** Remove everything past its period now, batch by batch (what the interval runs; the CLI and tests call it). */
  sweep(): Promise<SweepReport>;
  /** Run `sweep` every interval (a run still going is not started twice). */
  start(): void;
  /** Stop the interval; a sweep under way stops after its current batch. */
  stop(): Promise<void>;
  /**
   * SQLite: rebuild the file in incremental mode (`mailroom admin vacuum`), which shrinks it to its live pages and
   * lets later sweeps give space back; null on PostgreSQL, whose files only VACUUM FULL or pg_repack shrink.
   */
  vacuum(): Promise<{ before: SqliteStorage; after: SqliteStorage } | null>;
}

export interface RetentionSweepDeps {
  work: Work;
  dialect: Pick<DialectInfo, 'name'>;
  clock: Clock;
  logger: Logger;
  policy: RetentionPolicy;
  /** Rows per batch: messages per transaction, records per DELETE. */
  batch: number;
  intervalMs: number;
  mail: Pick<MailStore, 'retentionPeriods' | 'expiredMessages' | 'sweepMessages' | 'trimExpunged'>;
  events: Pick<EventStore, 'deleteOlderThan'>;
  webhooks: Pick<WebhookStore, 'deleteAttemptsOlderThan'>;
  queue: Pick<Queue, 'deleteDeadOlderThan'>;
  /** The queues whose dead jobs expire (the worker's). */
  queues: () => readonly string[];
  tokens: Pick<ServiceTokenStore, 'deleteClaimsOlderThan'>;
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

function byWorkspace(rows: readonly ExpiredMessage[]): Map<string, string[]> {
  const groups = new Map<string, string[]>();
  for (const row of rows) {
    const ids = groups.get(row.workspace_id) ?? [];
    ids.push(row.id);
    groups.set(row.workspace_id, ids);
  }
  return groups;
}

const emptyReport = (): SweepReport => ({ messages: 0, events: 0, webhookAttempts: 0, deadJobs: 0, idempotencyKeys: 0, expunged: 0, batches: 0, longestBatchMs: 0, longestMessageBatchMs: 0, pagesFreed: 0 });

/**
 * The retention sweep, run by the worker role (several workers may run it at once: every delete takes rows no other
 * holds, SKIP LOCKED on PostgreSQL, and deleting a row twice deletes nothing). Messages go folder by folder and period
 * by period, `batch` candidates at a time, one short transaction per workspace among them; the service's own records
 * go `batch` rows per DELETE. Between batches the sweep yields, so it never keeps the database from other work.
 */
export function createRetentionSweep(deps: RetentionSweepDeps): RetentionSweep {
  const { work, clock, logger, policy, batch } = deps;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<SweepReport> | undefined;
  let stopping = false;
  let warnedNoVacuum = false;

  async function timed<T>(report: SweepReport, step: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      return await step();
    } finally {
      report.batches += 1;
      report.longestBatchMs = Math.max(report.longestBatchMs, performance.now() - started);
    }
  }

  /** The periods in use for a folder: the default (unless never) and every one a workspace chose. */
  async function groups(folder: RetentionFolder): Promise<PeriodGroup[]> {
    const defaultDays = folder === 'trash' ? policy.trashDays : policy.spamDays;
    const periods = new Set(await deps.mail.retentionPeriods(work, folder));
    if (defaultDays > 0) periods.add(defaultDays);
    return [...periods].sort((a, b) => a - b).map((days) => ({ folder, days, defaultDays }));
  }

  async function sweepGroup(group: PeriodGroup, now: number, report: SweepReport): Promise<void> {
    const cutoff = now - group.days * DAY_MS;
    let after: ExpiredMessage | null = null;
    while (!stopping) {
      const rows = await deps.mail.expiredMessages(work, group, cutoff, after, batch);
      if (rows.length === 0) return;
      after = rows[rows.length - 1]!;
      for (const [workspaceId, ids] of byWorkspace(rows)) {
        const started = performance.now();
        const removed = await timed(report, () => work.transaction().execute((trx) => deps.mail.sweepMessages(trx, workspaceId, ids, group.folder, cutoff)));
        report.longestMessageBatchMs = Math.max(report.longestMessageBatchMs, performance.now() - started);
        report.messages += removed.length;
      }
      if (rows.length < batch) return;
      await nextTurn();
    }
  }

  /** Call `step` (one DELETE of at most `batch` rows) until it deletes fewer; 0 days = never. */
  async function drain(report: SweepReport, days: number, now: number, step: (cutoff: number) => Promise<number>): Promise<number> {
    if (days === 0) return 0;
    let total = 0;
    while (!stopping) {
      const n = await timed(report, () => step(now - days * DAY_MS));
      total += n;
      if (n < batch) break;
      await nextTurn();
    }
    return total;
  }

  /** SQLite: hand the free pages back, a chunk per transaction, when the file is in incremental mode. */
  async function giveBack(report: SweepReport): Promise<void> {
    if (deps.dialect.name !== 'sqlite') return;
    const storage = await sqliteStorage(work);
    if (storage.autoVacuum !== 2) {
      if (!warnedNoVacuum && storage.freePages > 0) logger.warn({ free_pages: storage.freePages }, 'the SQLite file keeps the space deletes free; run `mailroom admin vacuum` once to shrink it and have the sweep give space back');
      warnedNoVacuum = true;
      return;
    }
    while (!stopping) {
      const n = await timed(report, () => giveBackPages(work, PAGES_PER_GIVE_BACK));
      report.pagesFreed += n;
      if (n < PAGES_PER_GIVE_BACK) return;
      await nextTurn();
    }
  }

  async function sweepOnce(): Promise<SweepReport> {
    const report = emptyReport();
    const now = clock.now();
    for (const folder of FOLDERS) for (const group of await groups(folder)) await sweepGroup(group, now, report);
    report.events = await drain(report, policy.eventsDays, now, (cutoff) => deps.events.deleteOlderThan(work, cutoff, batch));
    report.webhookAttempts = await drain(report, policy.webhookAttemptsDays, now, (cutoff) => deps.webhooks.deleteAttemptsOlderThan(work, cutoff, batch));
    report.deadJobs = await drain(report, policy.deadJobsDays, now, (cutoff) => deps.queue.deleteDeadOlderThan(work, deps.queues(), cutoff, batch));
    report.idempotencyKeys = await drain(report, policy.idempotencyDays, now, (cutoff) => deps.tokens.deleteClaimsOlderThan(work, cutoff, batch));
    report.expunged = await drain(report, EXPUNGE_LOG_DAYS, now, (cutoff) => deps.mail.trimExpunged(work, cutoff, batch));
    await giveBack(report);
    return report;
  }

  function sweep(): Promise<SweepReport> {
    // One sweep at a time in a process: a call while one runs gets that one's report.
    running ??= sweepOnce().finally(() => {
      running = undefined;
    });
    return running;
  }

  return {
    sweep,
    start() {
      stopping = false;
      timer = setInterval(() => {
        sweep().then(
          (report) => {
            const removed = report.messages + report.events + report.webhookAttempts + report.deadJobs + report.idempotencyKeys + report.expunged;
            if (removed > 0 || report.pagesFreed > 0) logger.info(report, 'retention sweep');
          },
          (err: unknown) => logger.warn({ err }, 'retention sweep failed; it runs again at the next interval'),
        );
      }, deps.intervalMs);
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      stopping = true;
      await running?.catch(() => undefined);
    },
    vacuum: async () => (deps.dialect.name === 'sqlite' ? rebuildIncremental(work) : null),
  };
}

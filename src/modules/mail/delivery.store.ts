import { sql, type Kysely, type SelectQueryBuilder, type Updateable } from 'kysely';
import type { DialectInfo } from '../../db/dialect.js';
import type { GroupCommit } from '../../db/group-commit.js';
import { preparedQuery, preparedWrite, type Param } from '../../db/prepared.js';
import { asWork, tablesOf, type Work } from '../../db/tables.js';
import type { BackoffPolicy } from '../../jobs/backoff.js';
import type { ClaimedJob, LeaseHoldParams, Queue } from '../../jobs/queue.js';
import { settleJob, type JobOutcome } from '../../jobs/worker.js';
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import type { EmitInput } from '../events/event.types.js';
import { messageWithRawQuery as mailRawQuery, type MessageRow } from './message.store.js';
import type { MailTables } from './mail.table.js';
import type { Attempt, DeliveryStatus, OutboundTable, RecipientState } from './outbound.table.js';
import type { SuppressionStore } from './suppression.store.js';
import type { SuppressionTable } from './suppression.table.js';

// Every delivery runs these statements (prepared: see db/prepared.ts; the state updates that are writes nobody
// reads a result of may be sent with the transaction's next statement on PostgreSQL). The job's lease is the
// queue's: its check comes from the queue (`holdLease`, or `leaseHoldPart` inside one statement with a mark).
type MessageKey = { workspaceId: string; messageId: string };
/** The message's columns and the outbound row's; outbound columns whose names the message also has are renamed. */
type Loaded = MessageRow & { raw: Buffer } & Omit<OutboundTable, 'message_id' | 'workspace_id' | 'status' | 'created_at' | 'updated_at'> & {
  delivery_status: DeliveryStatus;
  outbound_created_at: number;
  outbound_updated_at: number;
  /** The workspace's verified sending domain of the mailbox's domain, if any: its DKIM key. */
  own_domain_id: string | null;
  own_dkim_selector: string | null;
  own_dkim_private_key: string | null;
  own_return_path_host: string | null;
};
/** The domains module's part of a delivery's read: the workspace's verified domains and their keys (`verifiedDomainsSelect`). */
export type VerifiedDomainsPart = (handle: Kysely<MailTables>, workspaceId: string) => SelectQueryBuilder<unknown, never, VerifiedDomainRow>;
interface VerifiedDomainRow {
  id: string;
  domain: string;
  dkim_selector: string | null;
  dkim_private_key: string | null;
  /** Its return-path host, only once verified. */
  return_path_host: string | null;
}

/**
 * A delivery's one read: the delivery state, the message (for the events' view), its raw source, and the DKIM key
 * of the workspace's verified sending domain named like the mailbox's domain (which `domains.signingKey` takes
 * from here rather than reading it with a statement of its own). The domain is matched as the address's suffix after
 * its `@`, with functions both databases have; the domains' rows come as the domains store's part.
 */
function loadSelect(db: Kysely<MailTables>, p: Param, domains: VerifiedDomainsPart) {
  return mailRawQuery(db, p<string>('workspaceId'))
    .innerJoin('outbound', (join) => join.onRef('outbound.message_id', '=', 'messages.id').onRef('outbound.workspace_id', '=', 'messages.workspace_id'))
    .leftJoin(domains(db, p<string>('workspaceId')).as('sd'), (join) =>
      join.on(sql<boolean>`substr(${sql.ref('mailboxes.address')}, length(${sql.ref('mailboxes.address')}) - length(${sql.ref('sd.domain')})) = ${sql.lit('@')} || ${sql.ref('sd.domain')}`),
    )
    .select([
      'outbound.status as delivery_status',
      'outbound.mail_from',
      'outbound.recipients_json',
      'outbound.attempts_json',
      'outbound.last_error',
      'outbound.smtp_response',
      'outbound.data_started_at',
      'outbound.send_at',
      'outbound.job_id',
      'outbound.list_unsubscribe',
      'outbound.delivery_notification',
      'outbound.created_at as outbound_created_at',
      'outbound.updated_at as outbound_updated_at',
      'sd.id as own_domain_id',
      'sd.dkim_selector as own_dkim_selector',
      'sd.dkim_private_key as own_dkim_private_key',
      'sd.return_path_host as own_return_path_host',
    ])
    .where('messages.id', '=', p<string>('messageId'));
}
/**
 * The statuses a run starts from. A `scheduled` message is started only by the run that flips it to `processing`
 * while it is still `scheduled`: a cancel that came first (`cancelled`, job removed) leaves it nothing to start.
 */
const STARTABLE: readonly DeliveryStatus[] = ['scheduled', 'queued', 'processing'];
/** The two marks a run puts on its outbound row: it has started, and its DATA has begun. */
type Mark = 'processing' | 'data_started';
const MARK_VALUES: Record<Mark, (p: Param) => Updateable<OutboundTable>> = {
  processing: (p) => ({ status: 'processing', updated_at: p<number>('now') }),
  data_started: (p) => ({ data_started_at: p<number>('now') }),
};
/** A mark alone (after a separate lease check). */
const markQuery = (mark: Mark) =>
  preparedWrite<MessageKey & { now: number }, MailTables>((db, p) =>
    db.updateTable('outbound').set(MARK_VALUES[mark](p)).where('workspace_id', '=', p<string>('workspaceId')).where('message_id', '=', p<string>('messageId')),
  );
const markQueries = { processing: markQuery('processing'), data_started: markQuery('data_started') };

/** The PostgreSQL protocol's two statements, each with the queue's lease check inside (see `oneStatementProtocol`). */
function leaseGuardedQueries(queue: Pick<Queue, 'leaseHoldPart'>, domains: VerifiedDomainsPart) {
  /**
   * The lease check and the `data_started` mark in one statement, where the database has writable CTEs (PostgreSQL):
   * the outbound row changes only if the job row's lease matched, and a row back says both happened. Two round
   * trips become one.
   */
  const leaseAndMarkDataStarted = preparedQuery<MessageKey & LeaseHoldParams, { message_id: string }, MailTables>((db, p) =>
    db
      .with('lease', (qc) => queue.leaseHoldPart(qc, p))
      .updateTable('outbound')
      .set(MARK_VALUES.data_started(p))
      .where('workspace_id', '=', p<string>('workspaceId'))
      .where('message_id', '=', p<string>('messageId'))
      .where((eb) => eb.exists(eb.selectFrom('lease').select('lease.id')))
      .returning('outbound.message_id'),
  );
  /**
   * PostgreSQL: the read and the run's start in one statement. The lease check and the `processing` mark run as
   * writable CTEs; the mark only where a run may start (`mayStart`), and `started` says whether it was made. The
   * read sees the row as it was before the mark (one snapshot for the whole statement). It is `loadSelect` as a
   * derived table, which PostgreSQL flattens into the plan of the plain read, so the CTEs' names need no cast.
   */
  const loadAndStart = preparedQuery<MessageKey & LeaseHoldParams, Loaded & { started: boolean }, MailTables>((db, p) =>
    db
      .with('lease', (qc) => queue.leaseHoldPart(qc, p))
      .with('started', (qc) =>
        qc
          .updateTable('outbound')
          .set(MARK_VALUES.processing(p))
          .where('workspace_id', '=', p<string>('workspaceId'))
          .where('message_id', '=', p<string>('messageId'))
          .where('status', 'in', STARTABLE)
          .where('data_started_at', 'is', null)
          .where((eb) => eb.exists(eb.selectFrom('lease').select('lease.id')))
          .returning('outbound.message_id'),
      )
      .selectFrom(loadSelect(db, p, domains).as('loaded'))
      .selectAll('loaded')
      .select((eb) => eb.exists(eb.selectFrom('started').select('started.message_id')).as('started')),
  );
  return { leaseAndMarkDataStarted, loadAndStart };
}

type SaveParams = MessageKey & { status: DeliveryStatus; recipients: string; attempts: string; lastError: string | null; smtpResponse: string | null; now: number };
const saveQuery = preparedWrite<SaveParams, MailTables>((db, p) =>
  db
    .updateTable('outbound')
    .set({
      status: p<DeliveryStatus>('status'),
      recipients_json: p<string>('recipients'),
      attempts_json: p<string>('attempts'),
      last_error: p<string | null>('lastError'),
      smtp_response: p<string | null>('smtpResponse'),
      data_started_at: null,
      updated_at: p<number>('now'),
    })
    .where('workspace_id', '=', p<string>('workspaceId'))
    .where('message_id', '=', p<string>('messageId')),
);

/** A delivery job: one per outbound message. */
export type DeliveryJob = ClaimedJob<{ message_id: string }>;

/** The outbound row as a run works with it: its recipients and attempts as lists. */
export type Delivery = Omit<OutboundTable, 'recipients_json' | 'attempts_json' | 'in_reply_to'> & { recipients: RecipientState[]; attempts: Attempt[] };

/** What `startRun` read, and whether the run may go on. */
export interface RunStart {
  delivery: Delivery;
  /** The message (the events' view of it) and its raw source. */
  message: MessageRow & { raw: Buffer };
  /**
   * The DKIM key of the workspace's verified sending domain named like the mailbox's domain, if any, and its
   * return-path host once verified (the envelope senders' domain then).
   */
  ownDomain: { id: string; dkim_selector: string; dkim_private_key: string; return_path_host: string | null } | null;
  /** This run holds the job's lease and has marked the message `processing`: it may send. */
  started: boolean;
}

/** The outcome a run records: the new delivery state, the events it causes and what becomes of the job. */
export interface Settlement {
  status: DeliveryStatus;
  recipients: RecipientState[];
  attempts: Attempt[];
  lastError: string | null;
  smtpResponse: string | null;
  events: EmitInput[];
  /** Addresses the run's permanent RCPT refusals suppress (an address suppressed already keeps its row). */
  suppressions?: SuppressionTable[] | undefined;
  outcome: Exclude<JobOutcome, { type: 'settled' }>;
  /** The job's retry policy, for a retry that names no delay (see `settleJob`). */
  backoff: BackoffPolicy;
}

export interface DeliveryStoreDeps {
  /** The pool: each step chooses its own transaction. */
  work: Work;
  /** The domains store's part of a run's read: the workspace's verified domains and their DKIM keys. */
  verifiedDomains: VerifiedDomainsPart;
  dialect: DialectInfo;
  /** Shared commits for the run's writes (every unit below is safe to run again from the start). */
  commits: GroupCommit;
  clock: Clock;
  /** The job's lease, checked before a step and settled with the outcome (see `settleJob`). */
  queue: Pick<Queue, 'holdLease' | 'leaseHoldPart' | 'complete' | 'retry' | 'bury'>;
  logger: Logger;
  /** Writes an event into the outbox, in the transaction it is given (`events.emit`). */
  emit: (trx: Work, event: EmitInput) => Promise<unknown>;
  suppressions: Pick<SuppressionStore, 'suppress'>;
}

/** A delivery's outcome was not saved: its run no longer holds the job's lease (see `settle`). */
class LeaseLost extends Error {
  constructor() {
    super('delivery lease lost');
  }
}

/** Where a run may start: not final, and no DATA begun (the `started` CTE's condition, for the SQLite protocol). */
const mayStart = (row: Loaded) => STARTABLE.includes(row.delivery_status) && row.data_started_at === null;

function keyOf(job: DeliveryJob): MessageKey {
  return { workspaceId: job.workspaceId ?? '', messageId: job.payload.message_id };
}

function leaseOf(job: DeliveryJob, now: number, live: boolean): LeaseHoldParams {
  return { jobId: job.id, leaseToken: job.leaseToken, now, liveAfter: live ? now : undefined };
}

function toRunStart(row: Loaded, started: boolean): RunStart {
  const delivery: Delivery = {
    message_id: row.id,
    workspace_id: row.workspace_id,
    status: row.delivery_status,
    mail_from: row.mail_from,
    recipients: JSON.parse(row.recipients_json) as RecipientState[],
    attempts: JSON.parse(row.attempts_json) as Attempt[],
    last_error: row.last_error,
    smtp_response: row.smtp_response,
    data_started_at: row.data_started_at,
    send_at: row.send_at,
    job_id: row.job_id,
    list_unsubscribe: row.list_unsubscribe,
    delivery_notification: row.delivery_notification,
    created_at: row.outbound_created_at,
    updated_at: row.outbound_updated_at,
  };
  const ownDomain =
    row.own_domain_id !== null && row.own_dkim_selector !== null && row.own_dkim_private_key !== null
      ? { id: row.own_domain_id, dkim_selector: row.own_dkim_selector, dkim_private_key: row.own_dkim_private_key, return_path_host: row.own_return_path_host }
      : null;
  return { delivery, message: row, ownDomain, started };
}

/** How a run takes its lease-guarded steps: the database decides how many statements and transactions that takes. */
interface RunProtocol {
  startRun: (job: DeliveryJob) => Promise<RunStart | undefined>;
  markDataStarted: (job: DeliveryJob) => Promise<boolean>;
}

/**
 * With writable CTEs (PostgreSQL): each step is one statement, atomic on its own, so it runs without a
 * transaction around it (a BEGIN and a COMMIT fewer).
 */
function oneStatementProtocol({ work, clock, queue, verifiedDomains }: DeliveryStoreDeps): RunProtocol {
  const { loadAndStart, leaseAndMarkDataStarted } = leaseGuardedQueries(queue, verifiedDomains);
  return {
    async startRun(job) {
      const row = (await loadAndStart(tablesOf<MailTables>(work), { ...keyOf(job), ...leaseOf(job, clock.now(), false) }))[0];
      return row && toRunStart(row, Boolean(row.started));
    },
    async markDataStarted(job) {
      return (await leaseAndMarkDataStarted(tablesOf<MailTables>(work), { ...keyOf(job), ...leaseOf(job, clock.now(), true) })).length > 0;
    },
  };
}

/** Without them (SQLite): the lease check and the mark are two statements that share a transaction. */
function checkThenMarkProtocol({ work, commits, clock, queue, verifiedDomains }: DeliveryStoreDeps): RunProtocol {
  // Every run reads its message with it (prepared: see db/prepared.ts).
  const loadQuery = preparedQuery<MessageKey, Loaded, MailTables>((db, p) => loadSelect(db, p, verifiedDomains));
  const holdLeaseAndMark = (job: DeliveryJob, mark: Mark, live: boolean) =>
    commits.run(async (trx) => {
      const now = clock.now();
      if (!(await queue.holdLease(asWork(trx), job, live ? { liveAfter: now } : {}))) return false;
      await markQueries[mark](tablesOf<MailTables>(trx), { ...keyOf(job), now });
      return true;
    }, job.workspaceId ?? undefined);
  return {
    async startRun(job) {
      const row = (await loadQuery(tablesOf<MailTables>(work), keyOf(job)))[0];
      if (!row) return undefined;
      return toRunStart(row, mayStart(row) && (await holdLeaseAndMark(job, 'processing', false)));
    },
    markDataStarted: (job) => holdLeaseAndMark(job, 'data_started', true),
  };
}

/**
 * The statements of one delivery run. Every step that starts or records a run is guarded by the job's lease: a
 * lease that ran out may have been claimed again, by another worker or by this one, and two runs of one message
 * must never both send it. The guard's UPDATE locks the job row, so a concurrent claim waits for (PostgreSQL) or
 * is serialized with (SQLite) the step's transaction.
 */
export interface DeliveryStore {
  /**
   * Start a delivery run: read the delivery state and the message (none when the message, and with it its state,
   * was deleted) and, where a run may start, mark it `processing` if this run holds the job's lease.
   */
  startDeliveryRun(job: DeliveryJob): Promise<RunStart | undefined>;
  /** Record that DATA begins, if this run holds a lease that has not run out: false means do not send. */
  markDataStarted(job: DeliveryJob): Promise<boolean>;
  /**
   * Settle a delivery run: write the new state, the events it causes and the job's outcome in one transaction.
   * Settling the job (guarded by its lease token) is also the lease check: when the job was taken over, nothing is
   * written and this resolves false.
   */
  settleDeliveryRun(job: DeliveryJob, settlement: Settlement): Promise<boolean>;
}

export function createDeliveryStore(deps: DeliveryStoreDeps): DeliveryStore {
  const { commits, clock, queue, logger, emit, suppressions } = deps;
  const protocol = deps.dialect.supportsWritableCte ? oneStatementProtocol(deps) : checkThenMarkProtocol(deps);
  return {
    startDeliveryRun: protocol.startRun,
    markDataStarted: protocol.markDataStarted,
    async settleDeliveryRun(job, settlement) {
      const written = commits.run(async (trx) => {
        await saveQuery(tablesOf<MailTables>(trx), {
          ...keyOf(job),
          status: settlement.status,
          recipients: JSON.stringify(settlement.recipients),
          attempts: JSON.stringify(settlement.attempts),
          lastError: settlement.lastError,
          smtpResponse: settlement.smtpResponse,
          now: clock.now(),
        });
        if (settlement.suppressions) await suppressions.suppress(asWork(trx), settlement.suppressions);
        for (const event of settlement.events) await emit(asWork(trx), event);
        // The job is settled last, so that on PostgreSQL its statement carries the writes above (db/write-coalescing.ts).
        // Without the lease they are undone: the transaction fails (and with it, once, a shared one: group-commit.ts).
        if (!(await settleJob({ queue, logger, backoff: settlement.backoff }, job, settlement.outcome, asWork(trx)))) throw new LeaseLost();
        return true;
      }, job.workspaceId ?? undefined);
      return written.catch((err: unknown) => {
        if (err instanceof LeaseLost) return false;
        throw err;
      });
    },
  };
}


import { sql, type QueryCreator, type Updateable } from 'kysely';
import type { Db } from '../../db/database.js';
import { createGroupCommit, type GroupCommit } from '../../db/group-commit.js';
import type { DialectInfo } from '../../db/dialect.js';
import type { Database } from '../../db/schema.js';
import { preparedQuery, preparedWrite, type Param } from '../../db/prepared.js';
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import { backoffDelay, type BackoffPolicy } from '../../jobs/backoff.js';
import type { ClaimedJob, Queue } from '../../jobs/queue.js';
import { settleJob, type JobHandler, type JobOutcome } from '../../jobs/worker.js';
import type { DomainService } from '../domains/domain.service.js';
import type { EventsService } from '../events/events.service.js';
import { messageWithRawQuery, type MessageRow } from '../messages/message.repository.js';
import { toMessageListView } from '../messages/message.views.js';
import { RouteError, type DeliveryResult, type RouteResolver, type SmtpDeliverer } from './delivery.types.js';
import { domainOf } from './recipients.js';
import type { DeliveryStatus, OutboundTable, RecipientStatus } from './sending.table.js';
import { DELIVERY_QUEUE } from './sending.service.js';
import type { MessageSigner } from './signing-pool.js';

interface RecipientState {
  address: string;
  status: RecipientStatus;
  response: string | null;
  mx: string | null;
}

interface Attempt {
  at: string;
  mx: string | null;
  recipients: string[];
  outcome: DeliveryResult['type'] | 'no_route';
  response: string;
}

export interface DeliveryDeps {
  db: Db;
  dialect: DialectInfo;
  /** The job queue, to settle a delivery's job in the transaction that records its outcome. */
  queue: Queue;
  clock: Clock;
  logger: Logger;
  events: EventsService;
  domains: DomainService;
  routes: RouteResolver;
  deliverer: SmtpDeliverer;
  /** DKIM signatures (on worker threads in a running service). */
  signer: MessageSigner;
  /** Contract §1: first retry after DELIVERY_RETRY_BASE_MS, doubling, capped at an hour, ±20%. */
  retryBaseMs: number;
  /** Contract §1: a message not accepted after this long fails (RFC 5321 §4.5.4.1). */
  maxAgeMs: number;
  concurrency?: number;
  /** Shared commits: state changes of concurrent deliveries share a transaction (db/group-commit.ts). */
  commits?: GroupCommit;
}

const HOUR_MS = 3_600_000;

/** A delivery's outcome was not saved: its run no longer holds the job's lease (see `save`). */
class LeaseLost extends Error {
  constructor() {
    super('delivery lease lost');
  }
}

// Every delivery runs these statements (prepared: see db/prepared.ts; the state updates that are writes nobody
// reads a result of may be sent with the transaction's next statement on PostgreSQL).
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
};
/**
 * A delivery's one read: the delivery state, the message (for the events' view), its raw source, and the DKIM key
 * of the workspace's verified sending domain named like the mailbox's domain (which `domains.signingKey` takes
 * from here rather than reading it with a statement of its own). The domain is matched as the address's suffix after its `@`,
 * with functions both databases have.
 */
function loadSelect(from: QueryCreator<Database>, p: Param) {
  return messageWithRawQuery(from, p<string>('workspaceId'))
    .innerJoin('outbound', (join) => join.onRef('outbound.message_id', '=', 'messages.id').onRef('outbound.workspace_id', '=', 'messages.workspace_id'))
    .leftJoin('sending_domains', (join) =>
      join
        .onRef('sending_domains.workspace_id', '=', 'messages.workspace_id')
        .on('sending_domains.status', '=', 'verified')
        .on(
          sql<boolean>`substr(${sql.ref('mailboxes.address')}, length(${sql.ref('mailboxes.address')}) - length(${sql.ref('sending_domains.domain')})) = ${sql.lit('@')} || ${sql.ref('sending_domains.domain')}`,
        ),
    )
    .select([
      'outbound.status as delivery_status',
      'outbound.mail_from',
      'outbound.recipients_json',
      'outbound.attempts_json',
      'outbound.last_error',
      'outbound.smtp_response',
      'outbound.data_started_at',
      'outbound.created_at as outbound_created_at',
      'outbound.updated_at as outbound_updated_at',
      'sending_domains.id as own_domain_id',
      'sending_domains.dkim_selector as own_dkim_selector',
      'sending_domains.dkim_private_key as own_dkim_private_key',
    ])
    .where('messages.id', '=', p<string>('messageId'));
}
const loadQuery = preparedQuery<MessageKey, Loaded>((db, p) => loadSelect(db, p));
type LeaseParams = { id: string; leaseToken: string; now: number; liveAfter?: number | undefined };
/** The job row, touched if the lease is still this run's (and, with `liveAfter`, has not run out). */
function leaseUpdate(db: Pick<Db, 'updateTable'>, p: Param) {
  let update = db.updateTable('jobs').set({ updated_at: p<number>('now') }).where('id', '=', p<string>('id')).where('lease_token', '=', p<string>('leaseToken'));
  if (p.has('liveAfter')) update = update.where('run_at', '>', p<number>('liveAfter'));
  return update;
}
/** A row back means the lease is still this run's. */
const holdLeaseQuery = preparedQuery<LeaseParams, { id: string }>((db, p) => leaseUpdate(db, p).returning('id'));
/** The two marks a run puts on its outbound row: it has started, and its DATA has begun. */
type Mark = 'processing' | 'data_started';
const MARK_VALUES: Record<Mark, (p: Param) => Updateable<OutboundTable>> = {
  processing: (p) => ({ status: 'processing', updated_at: p<number>('now') }),
  data_started: (p) => ({ data_started_at: p<number>('now') }),
};
/** A mark alone (after a separate lease check). */
const markQuery = (mark: Mark) =>
  preparedWrite<MessageKey & { now: number }>((db, p) =>
    db.updateTable('outbound').set(MARK_VALUES[mark](p)).where('workspace_id', '=', p<string>('workspaceId')).where('message_id', '=', p<string>('messageId')),
  );
/**
 * The lease check and a mark in one statement, where the database has writable CTEs (PostgreSQL): the outbound
 * row changes only if the job row's lease matched, and a row back says both happened. Two round trips become one.
 */
const leaseAndMarkQuery = (mark: Mark) =>
  preparedQuery<MessageKey & LeaseParams, { message_id: string }>((db, p) =>
    db
      .with('lease', (qc) => leaseUpdate(qc, p).returning('id'))
      .updateTable('outbound')
      .set(MARK_VALUES[mark](p))
      .where('workspace_id', '=', p<string>('workspaceId'))
      .where('message_id', '=', p<string>('messageId'))
      .where((eb) => eb.exists(eb.selectFrom('lease').select('lease.id')))
      .returning('outbound.message_id'),
  );
const markQueries = { processing: markQuery('processing'), data_started: markQuery('data_started') };
const leaseAndMarkQueries = { processing: leaseAndMarkQuery('processing'), data_started: leaseAndMarkQuery('data_started') };
/**
 * PostgreSQL: the read and the run's start in one statement. The lease check and the `processing` mark run as
 * writable CTEs; the mark only where a run may start (not final, no DATA begun), and `started` says whether it
 * was made. The read sees the row as it was before the mark (one snapshot for the whole statement).
 */
const loadAndStartQuery = preparedQuery<MessageKey & LeaseParams, Loaded & { started: boolean }>((db, p) => {
  const withStart = db
    .with('lease', (qc) => leaseUpdate(qc, p).returning('id'))
    .with('started', (qc) =>
      qc
        .updateTable('outbound')
        .set(MARK_VALUES.processing(p))
        .where('workspace_id', '=', p<string>('workspaceId'))
        .where('message_id', '=', p<string>('messageId'))
        .where('status', 'in', ['queued', 'processing'])
        .where('data_started_at', 'is', null)
        .where((eb) => eb.exists(eb.selectFrom('lease').select('lease.id')))
        .returning('outbound.message_id'),
    );
  // The CTEs are only named by the raw `exists` below, so the query reads the schema's tables as any other.
  return loadSelect(withStart as unknown as QueryCreator<Database>, p).select(sql<boolean>`exists (select 1 from ${sql.table('started')})`.as('started'));
});
type SaveParams = MessageKey & { status: DeliveryStatus; recipients: string; attempts: string; lastError: string | null; smtpResponse: string | null; now: number };
const saveQuery = preparedWrite<SaveParams>((db, p) =>
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

/** The delivery worker's job handler: one job per outbound message, recipients grouped per domain. */
export function createDeliveryHandler(deps: DeliveryDeps): JobHandler<{ message_id: string }> {
  const { db, dialect, queue, clock, logger, events, domains, routes, deliverer, signer } = deps;
  const backoff: BackoffPolicy = { baseMs: deps.retryBaseMs, factor: 2, capMs: HOUR_MS, jitter: 0.2 };
  // Every unit below is safe to run again from the start, as group commit requires.
  const commits = deps.commits ?? createGroupCommit(db);

  /**
   * The delivery state and the message; none when the message (and with it its state) was deleted. `started`:
   * whether this run holds its lease and has marked the message `processing` (`loadAndStartQuery`); undefined where
   * the read cannot do that too (SQLite: `mark` does it after the read).
   */
  async function load(job: ClaimedJob<{ message_id: string }>): Promise<{ outbound: OutboundTable; message: Loaded; started: boolean | undefined } | undefined> {
    const key: MessageKey = { workspaceId: job.workspaceId ?? '', messageId: job.payload.message_id };
    const row = dialect.supportsWritableCte
      ? (await loadAndStartQuery(db, { ...key, id: job.id, leaseToken: job.leaseToken, now: clock.now() }))[0]
      : (await loadQuery(db, key))[0];
    if (!row) return undefined;
    const outbound: OutboundTable = {
      message_id: row.id,
      workspace_id: row.workspace_id,
      status: row.delivery_status,
      mail_from: row.mail_from,
      recipients_json: row.recipients_json,
      attempts_json: row.attempts_json,
      last_error: row.last_error,
      smtp_response: row.smtp_response,
      data_started_at: row.data_started_at,
      created_at: row.outbound_created_at,
      updated_at: row.outbound_updated_at,
    };
    return { outbound, message: row, started: 'started' in row ? Boolean(row.started) : undefined };
  }

  /**
   * Put `mark` on the outbound row if this run still holds its lease (see `holdLeaseAndMark`). On PostgreSQL that
   * is one statement, atomic on its own, so it runs without a transaction around it (a BEGIN and a COMMIT fewer);
   * on SQLite the check and the mark share a transaction.
   */
  function mark(job: ClaimedJob<unknown>, key: MessageKey, what: Mark, live: boolean): Promise<boolean> {
    if (dialect.supportsWritableCte) return holdLeaseAndMark(db, job, key, what, live);
    return commits.run((trx) => holdLeaseAndMark(trx, job, key, what, live));
  }

  /**
   * Whether this run still holds its job's lease (and, with `live`, the lease has not run out); if so, put `mark`
   * on the outbound row in the same transaction. A lease that ran out may have been claimed again, by another
   * worker or by this one: two runs of one message must never both send it. The UPDATE locks the job row, so a
   * concurrent claim waits for (PostgreSQL) or is serialized with (SQLite) the caller's transaction.
   */
  async function holdLeaseAndMark(trx: Db, job: ClaimedJob<unknown>, key: MessageKey, mark: Mark, live: boolean): Promise<boolean> {
    const now = clock.now();
    const lease: LeaseParams = { id: job.id, leaseToken: job.leaseToken, now, liveAfter: live ? now : undefined };
    if (dialect.supportsWritableCte) return (await leaseAndMarkQueries[mark](trx, { ...key, ...lease })).length > 0;
    if ((await holdLeaseQuery(trx, lease)).length === 0) return false;
    await markQueries[mark](trx, { ...key, now });
    return true;
  }

  /**
   * Write the new state, the events it causes and the job's outcome in one transaction. Settling the job
   * (guarded by its lease token) is also the lease check: when the job was taken over, nothing is written
   * and this resolves false. `message` is the row read for this delivery (the events' view of it).
   */
  async function save(
    job: ClaimedJob<unknown>,
    outbound: OutboundTable,
    message: MessageRow,
    state: { recipients: RecipientState[]; attempts: Attempt[]; status: DeliveryStatus; lastError: string | null; smtpResponse: string | null },
    emit: Array<{ type: 'message.accepted' | 'message.failed'; extra: Record<string, unknown> }>,
    outcome: Exclude<JobOutcome, { type: 'settled' }>,
  ): Promise<boolean> {
    const written = commits.run(async (trx) => {
      await saveQuery(trx, {
        workspaceId: outbound.workspace_id,
        messageId: outbound.message_id,
        status: state.status,
        recipients: JSON.stringify(state.recipients),
        attempts: JSON.stringify(state.attempts),
        lastError: state.lastError,
        smtpResponse: state.smtpResponse,
        now: clock.now(),
      });
      if (emit.length > 0) {
        const view = toMessageListView(message);
        for (const e of emit) await events.emit(trx, { workspaceId: outbound.workspace_id, type: e.type, data: { ...view, status: state.status, ...e.extra } });
      }
      // The job is settled last, so that on PostgreSQL its statement carries the writes above (db/write-coalescing.ts).
      // Without the lease they are undone: the transaction fails (and with it, once, a shared one: group-commit.ts).
      if (!(await settleJob({ queue, logger, backoff }, job, outcome, trx))) throw new LeaseLost();
      return true;
    });
    return written.catch((err: unknown) => {
      if (err instanceof LeaseLost) return false;
      throw err;
    });
  }

  function overall(recipients: RecipientState[]): DeliveryStatus {
    if (recipients.some((r) => r.status === 'pending')) return 'queued';
    if (recipients.some((r) => r.status === 'unknown')) return 'unknown';
    if (recipients.some((r) => r.status === 'accepted')) return 'accepted';
    return 'failed';
  }

  async function handle(job: ClaimedJob<{ message_id: string }>): Promise<JobOutcome> {
    const workspaceId = job.workspaceId ?? '';
    const loaded = await load(job);
    if (!loaded) return { type: 'done' };
    const { outbound, message } = loaded;
    if (outbound.status === 'accepted' || outbound.status === 'failed' || outbound.status === 'unknown') return { type: 'done' };
    const recipients = JSON.parse(outbound.recipients_json) as RecipientState[];
    const attempts = JSON.parse(outbound.attempts_json) as Attempt[];
    const now = clock.now();

    // A worker died (or its lease ran out) after DATA began: the peer may have the message. Never resend.
    if (outbound.data_started_at !== null) {
      for (const r of recipients) if (r.status === 'pending') r.status = 'unknown';
      attempts.push({ at: new Date(now).toISOString(), mx: null, recipients: [], outcome: 'ambiguous', response: 'delivery interrupted after DATA began' });
      const lastError = 'delivery interrupted after DATA began; not retried to avoid a duplicate';
      await save(job, outbound, message, { recipients, attempts, status: 'unknown', lastError, smtpResponse: outbound.smtp_response }, [], { type: 'done' });
      return { type: 'settled' };
    }

    const emit: Array<{ type: 'message.accepted' | 'message.failed'; extra: Record<string, unknown> }> = [];
    if (now - outbound.created_at > deps.maxAgeMs) {
      for (const r of recipients) {
        if (r.status !== 'pending') continue;
        r.status = 'failed';
        emit.push({ type: 'message.failed', extra: { recipient: r.address, reason: `not delivered within ${Math.round(deps.maxAgeMs / HOUR_MS)} h; last reply: ${r.response ?? 'none'}` } });
      }
      await save(job, outbound, message, { recipients, attempts, status: overall(recipients), lastError: 'gave up: maximum age reached', smtpResponse: outbound.smtp_response }, emit, { type: 'done' });
      return { type: 'settled' };
    }

    const outboundKey: MessageKey = { workspaceId, messageId: outbound.message_id };
    // On PostgreSQL the read already made the mark (a run that may start, as this one has found, always gets it).
    const started = loaded.started ?? (await mark(job, outboundKey, 'processing', false));
    if (!started) return { type: 'done' }; // another run owns the message now
    const fromDomain = domainOf(message.mailbox_address);
    const own =
      message.own_domain_id !== null && message.own_dkim_selector !== null && message.own_dkim_private_key !== null
        ? { id: message.own_domain_id, dkim_selector: message.own_dkim_selector, dkim_private_key: message.own_dkim_private_key }
        : null;
    const key = await domains.signingKey(fromDomain, own);
    const signed = key ? await signer.sign(Buffer.from(message.raw), key) : Buffer.from(message.raw);

    const groups = new Map<string, RecipientState[]>();
    for (const r of recipients) {
      if (r.status !== 'pending') continue;
      const domain = domainOf(r.address);
      groups.set(domain, [...(groups.get(domain) ?? []), r]);
    }
    let lastResponse: string | null = outbound.smtp_response;
    let lastError: string | null = null;

    for (const [domain, group] of groups) {
      let candidates;
      try {
        candidates = await routes.routes(domain);
      } catch (err) {
        const permanent = err instanceof RouteError && err.permanent;
        const reason = err instanceof Error ? err.message : String(err);
        attempts.push({ at: new Date(clock.now()).toISOString(), mx: null, recipients: group.map((r) => r.address), outcome: 'no_route', response: reason });
        lastError = reason;
        for (const r of group) {
          r.response = reason;
          if (permanent) {
            r.status = 'failed';
            emit.push({ type: 'message.failed', extra: { recipient: r.address, reason } });
          }
        }
        continue;
      }
      let result: DeliveryResult | null = null;
      for (const route of candidates) {
        result = await deliverer.deliver({
          route,
          mailFrom: outbound.mail_from,
          recipients: group.map((r) => r.address),
          message: signed,
          onDataStart: async () => {
            // No byte of DATA without a live lease: a run whose job was claimed again must not send a second copy.
            if (!(await mark(job, outboundKey, 'data_started', true))) throw new Error('lease lost or expired before DATA; not sending');
          },
        });
        const mx = `${route.host}${route.address && route.address !== route.host ? ` [${route.address}]` : ''}:${route.port}`;
        attempts.push({ at: new Date(clock.now()).toISOString(), mx, recipients: group.map((r) => r.address), outcome: result.type, response: result.response });
        for (const r of group) r.mx = mx;
        // Only a peer that could not have taken the message sends us on to the next host.
        if (!(result.type === 'deferred' && result.beforeMail)) break;
      }
      if (!result) continue;
      lastResponse = result.response;
      const refusedBy = new Map(('refused' in result ? result.refused : []).map((x) => [x.recipient.toLowerCase(), x]));
      for (const r of group) {
        const refusal = refusedBy.get(r.address);
        if (result.type === 'sent' && !refusal) {
          r.status = 'accepted';
          r.response = result.response;
        } else if (result.type === 'ambiguous') {
          r.status = 'unknown';
          r.response = result.response;
        } else {
          const code = refusal?.code ?? (result.type === 'sent' ? 0 : result.code ?? 0);
          r.response = refusal?.response ?? result.response;
          if (code >= 500) {
            r.status = 'failed';
            emit.push({ type: 'message.failed', extra: { recipient: r.address, reason: r.response } });
          } else {
            lastError = r.response;
          }
        }
      }
      if (result.type === 'sent' && group.some((r) => r.status === 'accepted')) {
        emit.push({ type: 'message.accepted', extra: { recipients: group.filter((r) => r.status === 'accepted').map((r) => r.address), smtp_response: result.response } });
      }
    }

    const status = overall(recipients);
    const outcome: Exclude<JobOutcome, { type: 'settled' }> =
      status === 'queued' ? { type: 'retry', error: lastError ?? 'deferred', delayMs: backoffDelay(backoff, job.attempt) } : { type: 'done' };
    const state = { recipients, attempts, status, lastError: status === 'failed' ? lastError ?? lastResponse : lastError, smtpResponse: lastResponse };
    if (!(await save(job, outbound, message, state, emit, outcome))) {
      logger.warn({ messageId: outbound.message_id, attempt: job.attempt }, 'delivery lease lost; another run owns the message');
    } else if (status === 'queued') {
      logger.info({ messageId: outbound.message_id, attempt: job.attempt, error: lastError }, 'delivery deferred');
    }
    return { type: 'settled' };
  }

  return { queue: DELIVERY_QUEUE, concurrency: deps.concurrency ?? 8, backoff, handle };
}

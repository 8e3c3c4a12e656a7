/**
 * Quotas per workspace: the operator's settings over the service-wide defaults, the usage they are checked
 * against, and the checks the mailbox, sending and inbound paths call. Counted in the database, so every process
 * sharing it counts the same: sends in hour windows (`quota_send_counts`, counted in the send's own transaction),
 * stored bytes from the mail store's folder counters, mailboxes by counting them.
 */
import { AUDIT_ACTIONS } from '../audit/audit.actions.js';
import type { AuditLog } from '../audit/audit.service.js';
import { OPERATOR } from '../tenancy/tenancy.types.js';
import type { Work } from '../../db/tables.js';
import type { Clock } from '../../lib/clock.js';
import { invalid, notFound } from '../../lib/errors.js';
import type { MailStore } from '../mail/mail.store.js';
import type { QuotaStore } from './quota.store.js';
import { isQuotaName, QUOTA_NAMES, quotaExceeded, type QuotaName, type Quotas, type QuotaShow, type QuotaSources, type UsageReport } from './quota.types.js';

export const HOUR_MS = 3_600_000;
/** A day, as the daily quota counts it: the current clock hour and the 23 before it. */
export const DAY_WINDOWS = 24;
/** How long a process trusts the limits it read for a workspace: a change reaches the other processes within this. */
export const LIMITS_CACHE_MS = 5000;
/** Workspaces whose limits a process keeps at once (the cache starts over past this). */
const LIMITS_CACHE_ENTRIES = 10_000;
/** Old send windows deleted per statement of a sweep. */
const SWEEP_BATCH = 500;

export interface QuotaService {
  /** Usage and the limits in force (null = unlimited): the tenant's `GET /app/api/usage`, and other modules' view. */
  usageOf(workspaceId: string): Promise<UsageReport>;
  /** The operator's view: usage, limits, and whether each comes from the workspace's setting or the default. */
  show(workspaceId: string): Promise<QuotaShow>;
  /** Set a quota (a whole number, or `unlimited`), or `default` to take the service-wide default again. */
  set(workspaceId: string, name: string, value: string): Promise<QuotaShow>;
  /** The limits in force, as this process last read them (at most LIMITS_CACHE_MS ago). `conn`: the caller's transaction. */
  limitsOf(workspaceId: string, conn?: Work): Promise<Quotas>;
  /** Before a mailbox is created, in its transaction: 429 when the workspace has its quota of mailboxes. */
  checkMailboxes(trx: Work, workspaceId: string): Promise<void>;
  /** Before a send (or a batch of `count`), outside its transaction: 429 when it would pass an hourly or daily quota. */
  checkSend(conn: Work, workspaceId: string, count: number): Promise<void>;
  /** In the send's transaction: count `count` messages sent, and 429 (rolling the count back with the send) past a quota. */
  countSend(trx: Work, workspaceId: string, count: number): Promise<void>;
  /**
   * Inbound mail: null when `bytes` more fit in the workspace's stored bytes, else why not. With 0 bytes: whether
   * it is already full (RCPT); with the message's size: whether this message would take it over (end of DATA).
   */
  storageRefusal(workspaceId: string, bytes: number): Promise<string | null>;
  /** Forget send windows older than a day (run by the worker role's housekeeping); how many rows went. */
  sweep(): Promise<number>;
}

export interface QuotaDeps {
  work: Work;
  store: QuotaStore;
  mail: Pick<MailStore, 'mailUsage' | 'storedBytes' | 'mailboxCount'>;
  clock: Clock;
  /** The service-wide defaults (MAILROOM_QUOTA_*); null = unlimited. */
  defaults: Readonly<Quotas>;
  /** Whether a workspace exists (the operator names it by id). */
  workspaceExists: (workspaceId: string) => Promise<boolean>;
  /** A quota set by the operator, in the workspace's audit log. */
  audit: Pick<AuditLog, 'record'>;
}

type SendWindow = { windowStart: number; sent: number };

const hourStartOf = (now: number): number => now - (now % HOUR_MS);
const secondsUntil = (at: number, now: number): number => Math.max(1, Math.ceil((at - now) / 1000));

/** A quota's value as the operator writes it: a whole number, `unlimited`, or `default` (undefined: drop the setting). */
function parseValue(name: QuotaName, value: string): number | null | undefined {
  const text = value.trim().toLowerCase();
  if (text === 'default') return undefined;
  if (text === 'unlimited' || text === 'none') return null;
  if (!/^\d{1,15}$/.test(text)) throw invalid('invalid_quota_value', `the value of ${name} must be a whole number, unlimited or default; got '${value}'`);
  return Number(text);
}

/**
 * Past an hourly or daily quota with `count` more messages, given the windows (oldest first) and the counts in
 * them: the error, with the seconds until the window that holds the excess has passed; null when they fit.
 */
export function sendRefusal(limits: Pick<Quotas, 'sent_per_hour' | 'sent_per_day'>, windows: readonly SendWindow[], now: number, count: number) {
  const hourStart = hourStartOf(now);
  const hour = windows.find((w) => w.windowStart === hourStart)?.sent ?? 0;
  if (limits.sent_per_hour !== null && hour + count > limits.sent_per_hour) {
    return quotaExceeded('sent_per_hour', `this workspace may send ${limits.sent_per_hour} messages an hour; ${hour} sent this hour`, secondsUntil(hourStart + HOUR_MS, now));
  }
  const dayStart = hourStart - (DAY_WINDOWS - 1) * HOUR_MS;
  const inDay = windows.filter((w) => w.windowStart >= dayStart);
  let day = inDay.reduce((sum, w) => sum + w.sent, 0);
  const limit = limits.sent_per_day;
  if (limit === null || day + count <= limit) return null;
  const detail = `this workspace may send ${limit} messages a day (24 hours); ${day} sent`;
  // The day frees up as its oldest hours leave it: the first moment enough of them have.
  for (const w of inDay) {
    day -= w.sent;
    if (day + count <= limit) return quotaExceeded('sent_per_day', detail, secondsUntil(w.windowStart + DAY_WINDOWS * HOUR_MS, now));
  }
  return quotaExceeded('sent_per_day', detail, secondsUntil(hourStart + HOUR_MS, now));
}

export function createQuotaService(deps: QuotaDeps): QuotaService {
  const { work, store, mail, clock, defaults } = deps;
  const cache = new Map<string, { quotas: Quotas; sources: QuotaSources; readAt: number }>();

  async function readLimits(workspaceId: string, conn: Work): Promise<{ quotas: Quotas; sources: QuotaSources }> {
    const quotas = { ...defaults };
    const sources = Object.fromEntries(QUOTA_NAMES.map((n) => [n, 'default'])) as QuotaSources;
    for (const row of await store.settings(conn, workspaceId)) {
      if (!isQuotaName(row.name)) continue;
      quotas[row.name] = row.value === null ? null : Number(row.value);
      sources[row.name] = 'workspace';
    }
    return { quotas, sources };
  }

  async function cachedLimits(workspaceId: string, conn: Work): Promise<Quotas> {
    // Process time, not the service clock: this is how long a read is trusted, whatever time tests pretend it is.
    const now = performance.now();
    const hit = cache.get(workspaceId);
    if (hit && now - hit.readAt < LIMITS_CACHE_MS) return hit.quotas;
    const read = await readLimits(workspaceId, conn);
    if (cache.size >= LIMITS_CACHE_ENTRIES) cache.clear();
    cache.set(workspaceId, { ...read, readAt: now });
    return read.quotas;
  }

  const dayWindows = (conn: Work, workspaceId: string, now: number) => store.sendWindows(conn, workspaceId, hourStartOf(now) - (DAY_WINDOWS - 1) * HOUR_MS);

  async function usageOf(workspaceId: string): Promise<UsageReport> {
    const now = clock.now();
    const [quotas, held, windows] = await Promise.all([cachedLimits(workspaceId, work), mail.mailUsage(work, workspaceId), dayWindows(work, workspaceId, now)]);
    const hour = windows.find((w) => w.windowStart === hourStartOf(now))?.sent ?? 0;
    const day = windows.reduce((sum, w) => sum + w.sent, 0);
    return { usage: { mailboxes: held.mailboxes, stored_bytes: held.storedBytes, sent_last_hour: hour, sent_last_day: day }, quotas };
  }

  async function show(workspaceId: string): Promise<QuotaShow> {
    if (!(await deps.workspaceExists(workspaceId))) throw notFound('workspace_not_found', `no workspace ${workspaceId}`);
    cache.delete(workspaceId);
    const report = await usageOf(workspaceId);
    const { sources } = await readLimits(workspaceId, work);
    return { workspace_id: workspaceId, ...report, sources };
  }

  return {
    usageOf,
    show,

    async set(workspaceId, name, value) {
      if (!isQuotaName(name)) throw invalid('unknown_quota', `no quota '${name}'; the quotas are ${QUOTA_NAMES.join(', ')}`);
      const parsed = parseValue(name, value);
      if (!(await deps.workspaceExists(workspaceId))) throw notFound('workspace_not_found', `no workspace ${workspaceId}`);
      const before = (await show(workspaceId)).quotas[name];
      await work.transaction().execute(async (trx) => {
        if (parsed === undefined) await store.clearSetting(trx, workspaceId, name);
        else await store.setSetting(trx, { workspaceId, name, value: parsed, now: clock.now() });
        const after = parsed === undefined ? 'default' : parsed;
        await deps.audit.record(trx, { workspaceId, action: AUDIT_ACTIONS.quotaSet, actor: OPERATOR, target: { kind: 'quota', id: name }, details: { before, after } });
      });
      return show(workspaceId);
    },

    limitsOf: (workspaceId, conn = work) => cachedLimits(workspaceId, conn),

    async checkMailboxes(trx, workspaceId) {
      const limit = (await cachedLimits(workspaceId, trx)).mailboxes;
      if (limit === null) return;
      const count = await mail.mailboxCount(trx, workspaceId);
      if (count >= limit) throw quotaExceeded('mailboxes', `this workspace may have ${limit} mailboxes and has ${count}`);
    },

    async checkSend(conn, workspaceId, count) {
      const limits = await cachedLimits(workspaceId, conn);
      if (limits.sent_per_hour === null && limits.sent_per_day === null) return;
      const now = clock.now();
      const refusal = sendRefusal(limits, await dayWindows(conn, workspaceId, now), now, count);
      if (refusal) throw refusal;
    },

    async countSend(trx, workspaceId, count) {
      const limits = await cachedLimits(workspaceId, trx);
      const now = clock.now();
      const windowStart = hourStartOf(now);
      if (limits.sent_per_hour === null && limits.sent_per_day === null) return store.countSends(trx, workspaceId, windowStart, count);
      // One statement: the hour's count and the day's earlier hours. On PostgreSQL the hour row's lock makes
      // concurrent sends of the workspace count in turn.
      const dayStart = windowStart - (DAY_WINDOWS - 1) * HOUR_MS;
      const { hour, earlier } = await store.countSendsReturning(trx, workspaceId, windowStart, count, dayStart);
      const fits = (limits.sent_per_hour === null || hour <= limits.sent_per_hour) && (limits.sent_per_day === null || earlier + hour <= limits.sent_per_day);
      if (fits) return;
      // Past a quota (rare): the windows themselves, for the moment it frees up.
      throw sendRefusal(limits, await dayWindows(trx, workspaceId, now), now, 0) ?? quotaExceeded('sent_per_hour', 'the send quota was reached');
    },

    async storageRefusal(workspaceId, bytes) {
      const limit = (await cachedLimits(workspaceId, work)).stored_bytes;
      if (limit === null) return null;
      const stored = await mail.storedBytes(work, workspaceId);
      if (bytes === 0 ? stored < limit : stored + bytes <= limit) return null;
      return `this workspace stores ${stored} of its ${limit} bytes`;
    },

    async sweep() {
      const before = hourStartOf(clock.now()) - DAY_WINDOWS * HOUR_MS;
      let total = 0;
      for (;;) {
        const deleted = await store.deleteSendCountsBefore(work, before, SWEEP_BATCH);
        total += deleted;
        if (deleted === 0) return total;
      }
    },
  };
}

import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';

/**
 * The service's Prometheus metrics (served on the metrics listener, MAILROOM_METRICS_PORT). Code that records takes
 * this interface, or a `Pick` of it, never prom-client: recording is a counter increment or a histogram observation
 * on a child looked up in a map, so a request allocates nothing for it. Every label value is bounded (a route
 * pattern, a status or reply code, an outcome, a queue name): never a workspace, an address or anything a tenant
 * chooses. Counters are per process; Prometheus sums them over the processes.
 */
export interface Metrics {
  /** False for the no-op variant (no listener): callers may skip work done only to record. */
  readonly enabled: boolean;
  /** One HTTP answer: the route's pattern (never the raw URL; `unmatched` when no route matched). */
  httpRequest(route: string, method: string, status: number, seconds: number): void;
  /** An inbound SMTP connection, admitted to a session or refused (421) at connect. */
  smtpSession(admitted: boolean): void;
  /** An admitted SMTP session ended. */
  smtpSessionClosed(): void;
  /** A reply to RCPT TO (per recipient) or at the end of DATA (per message), by its code. */
  smtpReply(stage: SmtpStage, code: number): void;
  /** Seconds from the end of a message's DATA to its reply (analysis and commit). */
  smtpIngest(seconds: number): void;
  /** rspamd did not answer a check or a learn (down, slow, or an answer that is not its). */
  rspamdError(operation: RspamdOperation): void;
  /** Recipients of an outbound delivery run, by where the run left them. */
  delivery(outcome: DeliveryOutcome, recipients: number): void;
  /** One webhook attempt, by what it led to. */
  webhookAttempt(outcome: WebhookOutcome): void;
  /** A worker took over a job whose previous lease ran out (its holder died or stalled). */
  leaseExpired(queue: string): void;
  /** An IMAP session opened (+1) or closed (-1) on a listener. */
  imapSessions(listener: ImapListener, delta: 1 | -1): void;
  /** A LOGIN or AUTHENTICATE answered, by outcome. */
  imapLogin(outcome: ImapLoginOutcome): void;
  /** A tagged IMAP answer: the command's name (one the server knows, else `UNKNOWN`) and its status. */
  imapCommand(name: string, status: 'OK' | 'NO' | 'BAD'): void;
  /** A session entered (+1) or left (-1) IDLE. */
  imapIdle(delta: 1 | -1): void;
  /** A session in IDLE looked at its folder again (after a change was signalled, or its safety poll). */
  imapIdleLook(): void;
  /** Parts of the process read at scrape time (merged with those given before). */
  read(readers: ScrapeReaders): void;
  /** The exposition, in the Prometheus text format. */
  scrape(): Promise<{ contentType: string; body: string }>;
}

export type SmtpStage = 'rcpt' | 'data';
export type RspamdOperation = 'check' | 'learn';
/** `deferred`: still pending, retried later. */
export type DeliveryOutcome = 'accepted' | 'deferred' | 'failed' | 'unknown';
/** `retry`: failed, tried again later; `given_up`: failed for the last time; `gone`: 410, the endpoint set inactive. */
export type WebhookOutcome = 'delivered' | 'retry' | 'given_up' | 'gone';
export type ImapListener = 'imap' | 'imaps';
/** `limit`: the workspace held its share of sessions; `refused`: plaintext login without TLS. */
export type ImapLoginOutcome = 'ok' | 'failed' | 'throttled' | 'suspended' | 'limit' | 'refused';

/** One queue as the database has it, the counts capped (see the queue's `stats`). */
export interface QueueReading {
  queue: string;
  /** Jobs not done (scheduled, due and leased). */
  pending: number;
  /** Pending jobs whose time has come (an expired lease included). */
  due: number;
  /** Seconds the oldest due job has waited past its time; 0 when none is due. */
  oldestDueSeconds: number;
  /** Leased jobs whose lease ran out and that no worker has taken over yet. */
  expiredLeases: number;
  /** Jobs given up (kept for inspection). */
  dead: number;
}

/** What a scrape reads from the process's parts; each is optional, and cheap or cached. */
export interface ScrapeReaders {
  /** The queues, from the database: cached for QUEUE_READ_TTL_MS, one read at a time. */
  queues?: () => Promise<readonly QueueReading[]>;
  /** Inbound analysis: messages waiting for and holding an analysis slot, tasks queued for the threads, threads replaced. */
  analysis?: () => { waiting: number; active: number; threadQueue: number; threadRestarts: number };
  /** Event streams open in this process. */
  eventStreams?: () => number;
  /** PostgreSQL's connection pool; null on SQLite (one connection). */
  databasePool?: () => { total: number; idle: number; waiting: number } | null;
  /** Units of work waiting for a shared commit, per commit group. */
  commitQueues?: () => Readonly<Record<string, number>>;
}

/** A scrape storm reads the queues at most once per this long. */
export const QUEUE_READ_TTL_MS = 2000;

const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const INGEST_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** Metrics that record nothing: the service without a metrics listener. */
export const noMetrics: Metrics = {
  enabled: false,
  httpRequest: () => undefined,
  smtpSession: () => undefined,
  smtpSessionClosed: () => undefined,
  smtpReply: () => undefined,
  smtpIngest: () => undefined,
  rspamdError: () => undefined,
  delivery: () => undefined,
  webhookAttempt: () => undefined,
  leaseExpired: () => undefined,
  imapSessions: () => undefined,
  imapLogin: () => undefined,
  imapCommand: () => undefined,
  imapIdle: () => undefined,
  imapIdleLook: () => undefined,
  read: () => undefined,
  scrape: async () => ({ contentType: 'text/plain; version=0.0.4; charset=utf-8', body: '' }),
};

/** `read`, at most once per `ttlMs` and one at a time: callers within the time share the last answer (or failure). */
export function cachedRead<T>(read: () => Promise<T>, ttlMs: number, now: () => number = () => performance.now()): () => Promise<T> {
  let last: { at: number; value: Promise<T> } | null = null;
  return () => {
    const t = now();
    if (!last || t - last.at >= ttlMs) last = { at: t, value: read() };
    return last.value;
  };
}

/** A map's child for `key`, made once by `make` (a function made once too: recording allocates nothing). */
function childOf<K, V>(map: Map<K, V>, key: K, make: (key: K) => V): V {
  let child = map.get(key);
  if (child === undefined) map.set(key, (child = make(key)));
  return child;
}

/** Children of a counter with one label, by its value. */
function byLabel(counter: Counter): (value: string) => Counter.Internal {
  const children = new Map<string, Counter.Internal>();
  const make = (value: string) => counter.labels(value);
  return (value) => childOf(children, value, make);
}

/** Metrics over a prom-client registry of their own, with Node's process metrics (event-loop lag included). */
export function createMetrics(options: { onReadError?: (source: string, err: unknown) => void } = {}): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const registers = [registry];
  const readers: ScrapeReaders = {};
  const readErrors = new Counter({ name: 'mailroom_metrics_read_errors_total', help: 'Scrape-time reads that failed (their gauges keep the last values)', labelNames: ['source'], registers });
  const failed = (source: string, err: unknown): void => {
    readErrors.inc({ source });
    options.onReadError?.(source, err);
  };
  const http = httpMetrics(registry);
  const smtp = smtpMetrics(registry);
  const imap = imapMetrics(registry);
  const deliveries = new Counter({ name: 'mailroom_deliveries_total', help: 'Recipients of outbound delivery runs, by where each run left them', labelNames: ['outcome'], registers });
  const webhooks = new Counter({ name: 'mailroom_webhook_attempts_total', help: 'Webhook delivery attempts, by what each led to', labelNames: ['outcome'], registers });
  const leaseExpiries = new Counter({ name: 'mailroom_queue_lease_expiries_total', help: 'Jobs this process took over after their previous lease ran out', labelNames: ['queue'], registers });
  const rspamdErrors = new Counter({ name: 'mailroom_rspamd_errors_total', help: 'rspamd checks and learns that got no answer in time (down, slow or a wrong answer)', labelNames: ['operation'], registers });
  const rspamd = byLabel(rspamdErrors);
  const delivery = byLabel(deliveries);
  const webhook = byLabel(webhooks);
  const lease = byLabel(leaseExpiries);
  registerQueueGauges(registers, () => readers.queues, failed);
  registerProcessGauges(registers, readers);

  return {
    enabled: true,
    httpRequest: http.record,
    smtpSession: smtp.session,
    smtpSessionClosed: smtp.closed,
    smtpReply: smtp.reply,
    smtpIngest: smtp.ingest,
    rspamdError(operation) {
      rspamd(operation).inc();
    },
    delivery(outcome, recipients) {
      if (recipients > 0) delivery(outcome).inc(recipients);
    },
    webhookAttempt(outcome) {
      webhook(outcome).inc();
    },
    leaseExpired(queue) {
      lease(queue).inc();
    },
    ...imap,
    read(given) {
      if (given.queues) readers.queues = cachedRead(given.queues, QUEUE_READ_TTL_MS);
      if (given.analysis) readers.analysis = given.analysis;
      if (given.eventStreams) readers.eventStreams = given.eventStreams;
      if (given.databasePool) readers.databasePool = given.databasePool;
      if (given.commitQueues) readers.commitQueues = given.commitQueues;
    },
    async scrape() {
      return { contentType: registry.contentType, body: await registry.metrics() };
    },
  };
}

type Labels = Record<string, string>;
/** What the registry takes (prom-client types it as its own classes; any object of their shape will do). */
type RegisteredMetric = Parameters<Registry['registerMetric']>[0];
/** One series of a counter kept as a plain number. */
interface CountSeries {
  labels: Labels;
  value: number;
}
/** One series of a histogram kept as plain numbers: per-bucket (not cumulative) counts, sum and count. */
interface TimeSeries {
  labels: Labels;
  counts: Float64Array;
  sum: number;
  count: number;
}

/**
 * Counters and histograms of the hot paths (every HTTP answer, every SMTP reply) as plain numbers in objects the
 * caller keeps, written out at scrape: prom-client's own `inc` and `observe` hash the label values on every call,
 * which allocates. Registered as metrics of the registry, so they appear in its exposition like any other.
 */
function plainCounter(registry: Registry, name: string, help: string): (labels: Labels) => CountSeries {
  const series: CountSeries[] = [];
  const get = async () => ({ name, help, type: 'counter', aggregator: 'sum', values: series.map((s) => ({ labels: s.labels, value: s.value })) });
  // prom-client's registry takes any object of this shape; its Metric type is a class.
  registry.registerMetric({ name, help, type: 'counter', aggregator: 'sum', get, reset: () => undefined } as unknown as RegisteredMetric);
  return (labels) => {
    const made = { labels, value: 0 };
    series.push(made);
    return made;
  };
}

function plainHistogram(registry: Registry, name: string, help: string, buckets: readonly number[]): (labels: Labels) => TimeSeries {
  const series: TimeSeries[] = [];
  const values = (s: TimeSeries) => {
    let cumulative = 0;
    const out: Array<{ metricName: string; labels: Labels; value: number }> = buckets.map((le, i) => {
      cumulative += s.counts[i]!;
      return { metricName: `${name}_bucket`, labels: { ...s.labels, le: String(le) }, value: cumulative };
    });
    out.push({ metricName: `${name}_bucket`, labels: { ...s.labels, le: '+Inf' }, value: s.count });
    out.push({ metricName: `${name}_sum`, labels: s.labels, value: s.sum }, { metricName: `${name}_count`, labels: s.labels, value: s.count });
    return out;
  };
  const get = async () => ({ name, help, type: 'histogram', aggregator: 'sum', values: series.flatMap(values) });
  registry.registerMetric({ name, help, type: 'histogram', aggregator: 'sum', get, reset: () => undefined } as unknown as RegisteredMetric);
  return (labels) => {
    const made = { labels, counts: new Float64Array(buckets.length), sum: 0, count: 0 };
    series.push(made);
    return made;
  };
}

function observe(series: TimeSeries, buckets: readonly number[], value: number): void {
  for (let i = 0; i < buckets.length; i++) {
    if (value <= buckets[i]!) {
      series.counts[i]! += 1;
      break;
    }
  }
  series.sum += value;
  series.count += 1;
}

function httpMetrics(registry: Registry) {
  const requests = plainCounter(registry, 'mailroom_http_requests_total', 'HTTP answers, by route pattern, method and status');
  const duration = plainHistogram(registry, 'mailroom_http_request_duration_seconds', 'HTTP answer time, by route pattern and method', HTTP_BUCKETS);
  type Children = { route: string; verb: string; duration: TimeSeries; statuses: Map<number, CountSeries> };
  const byRoute = new Map<string, Map<string, Children>>();
  return {
    record: (route: string, method: string, code: number, seconds: number): void => {
      const verb = METHODS.has(method) ? method : 'OTHER';
      let verbs = byRoute.get(route);
      if (verbs === undefined) byRoute.set(route, (verbs = new Map<string, Children>()));
      let children = verbs.get(verb);
      if (children === undefined) verbs.set(verb, (children = { route, verb, duration: duration({ route, method: verb }), statuses: new Map() }));
      observe(children.duration, HTTP_BUCKETS, seconds);
      let counter = children.statuses.get(code);
      if (counter === undefined) children.statuses.set(code, (counter = requests({ route, method: verb, status: String(code) })));
      counter.value += 1;
    },
  };
}

function smtpMetrics(registry: Registry) {
  const registers = [registry];
  const sessions = new Counter({ name: 'mailroom_smtp_sessions_total', help: 'Inbound SMTP connections, admitted or refused at connect', labelNames: ['result'], registers });
  const open = new Gauge({ name: 'mailroom_smtp_sessions_open', help: 'Inbound SMTP sessions open now', registers });
  const replies = {
    rcpt: plainCounter(registry, 'mailroom_smtp_recipients_total', 'Replies to RCPT TO, by result and reply code'),
    data: plainCounter(registry, 'mailroom_smtp_messages_total', 'Replies at the end of DATA (messages accepted or refused), by result and reply code'),
  };
  const ingest = plainHistogram(registry, 'mailroom_smtp_ingest_duration_seconds', 'Seconds from the end of DATA to its reply (analysis and commit)', INGEST_BUCKETS)({});
  const admitted = sessions.labels('admitted');
  const refused = sessions.labels('refused');
  const children = { rcpt: new Map<number, CountSeries>(), data: new Map<number, CountSeries>() };
  const label = (code: number) => ({ result: code < 400 ? 'accepted' : 'refused', code: String(code) });
  const makers = { rcpt: (code: number) => replies.rcpt(label(code)), data: (code: number) => replies.data(label(code)) };
  return {
    session: (ok: boolean): void => {
      if (ok) {
        admitted.inc();
        open.inc();
      } else {
        refused.inc();
      }
    },
    closed: (): void => void open.dec(),
    reply: (stage: SmtpStage, code: number): void => {
      childOf(children[stage], code, makers[stage]).value += 1;
    },
    ingest: (seconds: number): void => observe(ingest, INGEST_BUCKETS, seconds),
  };
}

/** IMAP sessions, logins, answers and IDLEs: every label value is bounded (listener, outcome, command name, status). */
function imapMetrics(registry: Registry): Pick<Metrics, 'imapSessions' | 'imapLogin' | 'imapCommand' | 'imapIdle' | 'imapIdleLook'> {
  const registers = [registry];
  const open = new Gauge({ name: 'mailroom_imap_sessions_open', help: 'IMAP sessions open now, by listener (imap, imaps)', labelNames: ['listener'], registers });
  const logins = new Counter({ name: 'mailroom_imap_logins_total', help: 'IMAP logins, by outcome', labelNames: ['outcome'], registers });
  const commands = new Counter({ name: 'mailroom_imap_commands_total', help: 'Tagged IMAP answers, by command and status (OK, NO, BAD)', labelNames: ['command', 'status'], registers });
  const idle = new Gauge({ name: 'mailroom_imap_idle_sessions', help: 'IMAP sessions in IDLE now', registers });
  const looks = new Counter({ name: 'mailroom_imap_idle_looks_total', help: 'Looks of IDLE sessions at their folder (after a signalled change, or the safety poll)', registers });
  const listeners = new Map<string, ReturnType<typeof open.labels>>();
  const login = byLabel(logins);
  const answers = new Map<string, Counter.Internal>();
  return {
    imapSessions: (listener, delta) => void childOf(listeners, listener, (l) => open.labels(l)).inc(delta),
    imapLogin: (outcome) => void login(outcome).inc(),
    imapCommand: (name, status) => void childOf(answers, `${name} ${status}`, () => commands.labels(name, status)).inc(),
    imapIdle: (delta) => void idle.inc(delta),
    imapIdleLook: () => void looks.inc(),
  };
}

/** Queue gauges, each filled at scrape from the one cached read. */
function registerQueueGauges(registers: Registry[], reader: () => ScrapeReaders['queues'], failed: (source: string, err: unknown) => void): void {
  const fields: Array<[keyof Omit<QueueReading, 'queue'>, string, string]> = [
    ['pending', 'mailroom_queue_depth', 'Jobs not done per queue: scheduled, due and running (counted up to 10000)'],
    ['due', 'mailroom_queue_due', 'Jobs whose time has come per queue, waiting for a worker (counted up to 10000)'],
    ['oldestDueSeconds', 'mailroom_queue_oldest_due_age_seconds', 'Seconds the oldest due job of each queue has waited past its time'],
    ['expiredLeases', 'mailroom_queue_expired_leases', 'Jobs whose lease ran out and that no worker has taken over yet'],
    ['dead', 'mailroom_queue_dead', 'Jobs given up per queue (counted up to 10000)'],
  ];
  for (const [field, name, help] of fields) {
    new Gauge({
      name,
      help,
      labelNames: ['queue'],
      registers,
      async collect() {
        const read = reader();
        if (!read) return;
        try {
          for (const q of await read()) this.set({ queue: q.queue }, q[field]);
        } catch (err) {
          // Every gauge of the read sees the failure; it is counted once.
          if (field === 'pending') failed('queues', err);
        }
      },
    });
  }
}

/** Gauges read from the process's parts at scrape (no I/O). */
function registerProcessGauges(registers: Registry[], readers: ScrapeReaders): void {
  const gauge = (name: string, help: string, read: () => number | undefined) =>
    new Gauge({
      name,
      help,
      registers,
      collect() {
        const value = read();
        if (value !== undefined) this.set(value);
      },
    });
  gauge('mailroom_analysis_waiting', 'Inbound messages waiting for an analysis slot', () => readers.analysis?.().waiting);
  gauge('mailroom_analysis_active', 'Inbound messages being analysed (parsed and authenticated)', () => readers.analysis?.().active);
  gauge('mailroom_analysis_thread_queue', 'Analysis tasks queued for the analysis threads', () => readers.analysis?.().threadQueue);
  new Counter({
    name: 'mailroom_analysis_thread_restarts_total',
    help: 'Analysis threads replaced (stuck on a message, or died)',
    registers,
    collect() {
      const total = readers.analysis?.().threadRestarts;
      if (total === undefined) return;
      // The pool counts; the counter follows it.
      this.reset();
      this.inc(total);
    },
  });
  gauge('mailroom_event_streams_open', 'Event streams (SSE) open in this process', () => readers.eventStreams?.());
  new Gauge({
    name: 'mailroom_db_pool_connections',
    help: 'PostgreSQL pool connections, by state (total, idle) and callers waiting for one (waiting)',
    labelNames: ['state'],
    registers,
    collect() {
      const pool = readers.databasePool?.();
      if (!pool) return;
      this.set({ state: 'total' }, pool.total);
      this.set({ state: 'idle' }, pool.idle);
      this.set({ state: 'waiting' }, pool.waiting);
    },
  });
  new Gauge({
    name: 'mailroom_db_commit_queue',
    help: 'Units of work waiting for a shared commit, per commit group',
    labelNames: ['group'],
    registers,
    collect() {
      for (const [group, units] of Object.entries(readers.commitQueues?.() ?? {})) this.set({ group }, units);
    },
  });
}

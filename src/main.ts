import type { FastifyInstance } from 'fastify';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError, type Config } from './config/config.js';
import type { ProcessRole } from './config/roles.js';
import { ping } from './db/database.js';
import { pendingMigrations } from './db/migrator.js';
import { createWorker, type Worker } from './jobs/worker.js';
import { createReadiness, type Readiness } from './lib/health.js';
import { listenOrExplain, type ListenerSettings } from './lib/listen-error.js';
import type { Logger } from './lib/logger.js';
import { cachedRead } from './lib/metrics.js';
import { relayTlsInsecure } from './modules/sending/routes.resolver.js';
import { asWork } from './db/tables.js';
import { startAuditSweeps } from './modules/audit/audit.service.js';
import { createMaintenance, type Maintenance } from './modules/tenancy/maintenance.js';
import { createSearchPendingMerge } from './modules/mail/search-pending.js';
import { createTenancyStore } from './modules/tenancy/tenancy.store.js';
import { createServices, type Services } from './services.js';
import { buildApp } from './transports/http/app.js';
import { createMetricsServer, type MetricsServer } from './transports/http/metrics.server.js';
import { createInboundSmtpServer, SMTP_CLOSE_TIMEOUT_MS } from './transports/smtp/inbound.server.js';
import { createFileCertificates, type CertificateSource } from './lib/tls-certificates.js';
import { createImapServer } from './transports/imap/server.js';
import { createImapShares } from './transports/imap/shares.js';
import { createSubmissionServer, createSubmissionSlots } from './transports/smtp/submission.server.js';

// The role list lives in a module of its own so the CLI can name it without loading the service.
export { ROLES, type ProcessRole } from './config/roles.js';
// The composition lives in services.ts; its callers know it from here.
export { createServices, type FeatureServices, type Plumbing, type Services } from './services.js';

/** How often the worker role forgets send counters older than a day. */
const QUOTA_SWEEP_MS = 60 * 60_000;

/** The Vite build of web/: dist/web beside the compiled service (dist/main.js), and the same folder from src/main.ts. */
const WEB_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'web');

export function createHttpApp(config: Readonly<Config>, services: Services, logger: Logger, readiness: Readiness = defaultReadiness(services)): Promise<FastifyInstance> {
  return buildApp({
    logger,
    health: { check: () => ping(services.database.db), ready: () => readiness.report() },
    metrics: services.metrics,
    auth: services.tenancy.auth,
    workspaceAdmin: services.tenancy.workspace,
    mailboxes: services.mailboxes,
    messages: services.messages,
    bulk: services.bulk,
    labels: services.labels,
    lists: services.lists,
    suppressions: services.suppressions,
    unsubscribes: services.unsubscribes,
    domains: services.domains,
    reports: services.reports,
    sending: services.sending,
    drafts: services.drafts,
    serviceTokens: services.serviceTokens,
    appPasswords: services.appPasswords.service,
    transactional: services.transactional,
    webhooks: services.webhooks.service,
    audit: services.audit,
    events: services.eventStream,
    retention: services.retention.service,
    pageCacheBytes: config.pageCacheBytes,
    rateLimitPerMinute: config.rateLimitPerMinute,
    bodyThreads: config.bodyThreads,
    admission: {
      bodyBytes: config.httpBodyBudgetBytes,
      bodyBytesPerWorkspace: config.httpBodyBudgetPerWorkspaceBytes,
      bodyWaitMs: config.httpBodyWaitMs,
      inflight: config.httpMaxInflight,
      inflightPerWorkspace: config.httpMaxInflightPerWorkspace,
    },
    // One process holds every count in the embedded SQLite mode (decision 210).
    rateLimitCounts: services.database.dialect.sharedByProcesses ? 'database' : 'memory',
    webRoot: WEB_ROOT,
    timeouts: { requestMs: config.httpRequestTimeoutMs, headersMs: config.httpHeadersTimeoutMs, keepAliveMs: config.httpKeepAliveTimeoutMs },
    acmeChallenges: services.acme?.service ?? null,
    sandbox: services.sandbox && services.sandboxDns ? { module: services.sandbox, dnsServer: services.sandboxDns.address } : null,
    quotas: services.quotas,
    clock: services.clock,
  });
}

/** How long a readiness answer about the database is reused: a probe storm costs it one round trip a second. */
const READY_DATABASE_TTL_MS = 1000;

/**
 * Readiness over the database (it answers, and has every migration this program knows); `mailroom serve` adds its
 * listeners (startService). Once every migration is seen applied it stays so: a running process never un-applies one.
 */
export function defaultReadiness(services: Pick<Services, 'database'>): Readiness {
  const readiness = createReadiness();
  const database = cachedRead(async () => {
    try {
      await ping(services.database.db);
      return null;
    } catch {
      return 'the database does not answer';
    }
  }, READY_DATABASE_TTL_MS);
  let migrated = false;
  const migrations = cachedRead(async () => {
    if (migrated) return null;
    try {
      const pending = await pendingMigrations(services.database.db);
      migrated = pending.length === 0;
      return migrated ? null : `${pending.length} not applied (run mailroom migrate)`;
    } catch {
      return 'the applied migrations cannot be read';
    }
  }, READY_DATABASE_TTL_MS);
  readiness.add('database', database);
  readiness.add('migrations', migrations);
  return readiness;
}

/** The submission listeners' ports (port 0 resolved), null for a listener that is off. */
export interface SubmissionPorts {
  submission: number | null;
  submissions: number | null;
}

export interface RunningService {
  /** The HTTP address when the api role runs (port 0 resolves to the picked port). */
  httpUrl: string | null;
  /** The inbound SMTP port when the smtp role runs. */
  smtpPort: number | null;
  /** The submission listeners' ports when the smtp role runs them (null: off). */
  submissionPorts: SubmissionPorts;
  /** The metrics listener's address (`http://host:port`) when MAILROOM_METRICS_PORT is set. */
  metricsUrl: string | null;
  /** The IMAP (STARTTLS) and IMAPS ports when the imap role runs with them on. */
  imapPort: number | null;
  imapsPort: number | null;
  /** Sandbox mode: `ip:port` of this process's sandbox DNS server; null without --sandbox. */
  sandboxDns: string | null;
  /**
   * Graceful stop: turn unready at once, close the listeners and stop the worker side by side (each role then closes
   * its threads), close the database, and last the metrics listener, which answers 503 to readiness probes until then.
   */
  stop(): Promise<void>;
}

/** The listeners that speak TLS; each may have a key and certificate of its own. */
export type TlsListener = 'smtp' | 'imap' | 'submission';

/**
 * The certificates of this process's TLS listeners. A listener's own pair (today only inbound SMTP's
 * MAILROOM_SMTP_TLS_KEY/CERT) comes first; then the general MAILROOM_TLS_KEY/CERT; then ACME
 * (MAILROOM_ACME_DIRECTORY_URL, which the configuration refuses beside the general files). Null: no TLS.
 * File pairs are read at start (a bad pair stops the start) and followed as they change.
 */
export interface ListenerCertificates {
  forListener(listener: TlsListener): CertificateSource | null;
  /** Stop watching files (the listeners keep what they serve). */
  close(): void;
}

export function createListenerCertificates(config: Readonly<Config>, acme: CertificateSource | null, logger: Logger): ListenerCertificates {
  const opened: CertificateSource[] = [];
  const files = (keyFile: string, certFile: string, variables: string): CertificateSource => {
    let source: CertificateSource;
    try {
      source = createFileCertificates({ keyFile, certFile }, logger, config.tlsCheckMs);
    } catch (err) {
      throw new ConfigError([`${variables}: ${(err as Error).message}`]);
    }
    opened.push(source);
    return source;
  };
  let general: CertificateSource | null | undefined;
  const generalSource = (): CertificateSource | null => {
    general ??= config.tlsKeyFile && config.tlsCertFile ? files(config.tlsKeyFile, config.tlsCertFile, 'MAILROOM_TLS_KEY/MAILROOM_TLS_CERT') : acme;
    return general;
  };
  let smtpOwn: CertificateSource | undefined;
  return {
    forListener(listener) {
      // Submission is SMTP too: the SMTP pair serves it unless the general pair or ACME is all there is.
      if ((listener === 'smtp' || listener === 'submission') && config.smtpTlsKeyFile && config.smtpTlsCertFile) {
        smtpOwn ??= files(config.smtpTlsKeyFile, config.smtpTlsCertFile, 'MAILROOM_SMTP_TLS_KEY/MAILROOM_SMTP_TLS_CERT');
        return smtpOwn;
      }
      return generalSource();
    },
    close() {
      for (const source of opened) source.close();
    },
  };
}

/** What each role starter is given: the process's services, and where it registers its listeners and its stop. */
interface RoleContext {
  config: Readonly<Config>;
  services: Services;
  logger: Logger;
  /** Each role's listener, and whether it is up now (readiness). */
  listeners: Map<string, () => boolean>;
  /** Each role's stop, run side by side; each closes its listener (or stops claiming) first, then what it used. */
  roleStops: Array<() => Promise<void>>;
}

/** Start the given roles in this process. */
export async function startService(config: Readonly<Config>, roles: readonly ProcessRole[], logger: Logger): Promise<RunningService> {
  const services = await createServices(config, { logger });
  const readiness = defaultReadiness(services);
  const role: RoleContext = { config, services, logger, listeners: new Map(), roleStops: [] };
  readiness.add('listeners', () => {
    const down = [...role.listeners].filter(([, up]) => !up()).map(([name]) => name);
    return down.length === 0 ? null : `not listening: ${down.join(', ')}`;
  });
  let metricsServer: MetricsServer | null = null;
  let metricsUrl: string | null = null;
  let httpUrl: string | null = null;
  let smtpPort: number | null = null;
  let imap: { imapPort: number | null; imapsPort: number | null } = { imapPort: null, imapsPort: null };
  const certificates = createListenerCertificates(config, services.acme?.certificates ?? null, logger);
  let submissionPorts: SubmissionPorts = { submission: null, submissions: null };
  // The same stop after a failed start as after a running one.
  const stop = async () => {
    readiness.stopping();
    await Promise.all(
      role.roleStops.map((stopRole) =>
        stopRole().catch((err: unknown) => {
          logger.error({ err }, 'error while stopping');
        }),
      ),
    );
    certificates.close();
    await services.database.destroy();
    await metricsServer?.close();
  };
  try {
    warnings(config, services, logger);
    if (config.metricsPort !== null) {
      metricsServer = createMetricsServer({ metrics: services.metrics, ready: () => readiness.report(), logger });
      ({ metricsUrl } = await startMetricsListener(config, metricsServer, logger));
    }
    // Every role's process keeps the ACME certificate current (and may renew it); the listeners start with the stored one.
    if (services.acme) {
      const acme = services.acme.service;
      role.roleStops.push(async () => acme.stop());
      await acme.start();
    }
    // Every role may store mail (a worker delivers to hosted mailboxes), so every process keeps the index's list short.
    const pendingMerge = createSearchPendingMerge({ work: asWork(services.database.db), dialect: services.database.dialect, logger });
    pendingMerge.start();
    role.roleStops.push(() => pendingMerge.stop());
    if (roles.includes('worker')) startWorkerRole(role);
    if (roles.includes('smtp')) {
      smtpPort = await startSmtpRole(role, certificates.forListener('smtp'));
      submissionPorts = await startSubmissionListeners(role, certificates.forListener('submission'));
    }
    if (roles.includes('imap')) imap = await startImapRole(role, certificates.forListener('imap'));
    if (roles.includes('api')) httpUrl = await startApiRole(role, readiness);
  } catch (err) {
    await stop();
    throw err;
  }
  return { httpUrl, smtpPort, submissionPorts, metricsUrl, ...imap, sandboxDns: services.sandboxDns?.address ?? null, stop };
}

function warnings(config: Readonly<Config>, services: Services, logger: Logger): void {
  if (services.sandboxDns) logSandbox(config, services.sandboxDns.address, logger);
  if (config.webhookAllowCidrs.length > 0) {
    logger.warn({ cidrs: config.webhookAllowCidrs }, 'MAILROOM_WEBHOOK_ALLOW_CIDRS exempts these networks from the webhook address rules; use only for development and tests');
  }
  if (config.deliveryAllowCidrs.length > 0) {
    logger.warn({ cidrs: config.deliveryAllowCidrs }, 'MAILROOM_DELIVERY_ALLOW_CIDRS exempts these networks from the outbound address rules; use only for development, tests and labs');
  }
  if (config.smtpRelay && relayTlsInsecure(config.smtpRelay)) {
    logger.warn('MAILROOM_SMTP_RELAY has ?tls=insecure: the relay\'s certificate is not verified, so its credentials may reach an impostor; use only in labs');
  }
}

async function startMetricsListener(config: Readonly<Config>, server: MetricsServer, logger: Logger): Promise<{ metricsUrl: string }> {
  const settings = { service: 'metrics', host: config.metricsHost, port: config.metricsPort ?? 0, hostVariable: 'MAILROOM_METRICS_HOST', portVariable: 'MAILROOM_METRICS_PORT' };
  const port = await listenOrExplain(settings, () => server.listen(config.metricsHost, config.metricsPort ?? 0));
  const host = config.metricsHost.includes(':') ? `[${config.metricsHost}]` : config.metricsHost;
  const metricsUrl = `http://${host}:${port}`;
  logger.info({ url: metricsUrl }, 'metrics listening');
  return { metricsUrl };
}

/** One listener of a role: its name (for readiness, and the log line `<name> listening`), its stop, and its bind. */
interface RoleListener<T> {
  name: string;
  up: () => boolean;
  stop: () => Promise<void>;
  /** Where it binds and the variables that move it (named when the bind fails for a reason a setting fixes). */
  settings: ListenerSettings;
  listen: () => Promise<T>;
  /** The log line's fields once bound (default: the host and the bound port), and its message if not the default. */
  fields?: (bound: T) => Record<string, unknown>;
  message?: string;
}

/** Register a listener for readiness and for the stop before it binds (a failed start closes it too), bind it, say so. */
async function startListener<T>(role: RoleContext, listener: RoleListener<T>): Promise<T> {
  role.listeners.set(listener.name, listener.up);
  role.roleStops.push(listener.stop);
  const bound = await listenOrExplain(listener.settings, listener.listen);
  role.logger.info(listener.fields?.(bound) ?? { host: listener.settings.host, port: bound }, listener.message ?? `${listener.name} listening`);
  return bound;
}

/**
 * The worker's share of a stop: half the shutdown time-out for running jobs, the rest for the other roles' closing
 * and the database; jobs still running then are handed back to the queue (jobs/worker.ts).
 */
const workerGraceMs = (config: Readonly<Config>) => Math.floor(config.shutdownTimeoutMs / 2);

/** Open SMTP sessions (inbound and submission) get at most half the shutdown time-out before their 421. */
const smtpCloseTimeoutMs = (config: Readonly<Config>) => Math.min(SMTP_CLOSE_TIMEOUT_MS, Math.floor(config.shutdownTimeoutMs / 2));

function startWorkerRole({ config, services, logger, roleStops }: RoleContext): void {
  const worker: Worker = createWorker(services.handlers, { queue: services.queue, logger, leaseMs: config.leaseMs, pollMs: config.workerPollMs, commits: services.workerCommits, metrics: services.metrics });
  const maintenance: Maintenance = createMaintenance({ work: asWork(services.database.db), store: createTenancyStore({ dialect: services.database.dialect }), clock: services.clock, logger });
  const unsubscribe = services.wakeups.subscribe((name) => worker.wake(name));
  // The queues' standing is read by the processes that work them (one series per worker process, all alike).
  const queues = services.handlers.map((h) => h.queue);
  services.metrics.read({ queues: () => services.queue.stats(queues) });
  worker.start();
  maintenance.start();
  // Send counters older than a day count for no quota any more.
  const quotaSweep = setInterval(() => void services.quotas.sweep().catch((err: unknown) => logger.warn({ err }, 'quota counter sweep failed')), QUOTA_SWEEP_MS);
  quotaSweep.unref();
  const stopAuditSweeps = startAuditSweeps(services.audit, logger);
  services.retention.sweep.start();
  logger.info('worker role started');
  roleStops.push(async () => {
    clearInterval(quotaSweep);
    stopAuditSweeps();
    await services.retention.sweep.stop();
    unsubscribe();
    maintenance.stop();
    await worker.stop(workerGraceMs(config));
    services.deliverer.close?.();
    await services.signer.close();
    await services.webhooks.close();
  });
}

async function startSmtpRole(role: RoleContext, certificates: CertificateSource | null): Promise<number> {
  const { config, services, logger } = role;
  const smtp = createInboundSmtpServer({
    inbound: services.inbound,
    logger,
    hostname: config.smtpHostname,
    maxSize: config.smtpMaxSize,
    maxClients: config.smtpMaxClients,
    maxClientsPerIp: config.smtpMaxClientsPerIp,
    maxSessionMs: config.smtpMaxSessionMs,
    maxCommands: config.smtpMaxCommands,
    idleMs: config.smtpIdleMs,
    closeTimeoutMs: smtpCloseTimeoutMs(config),
    metrics: services.metrics,
    tls: certificates ?? undefined,
  });
  const { smtpHost: host, smtpPort: port } = config;
  return startListener(role, {
    name: 'smtp',
    up: () => smtp.listening(),
    // Stop taking mail first (open sessions get 421 once the close time-out passes), then stop the analysis threads.
    stop: async () => {
      await smtp.close();
      await services.analyzer.close();
    },
    settings: { service: 'SMTP', host, port, hostVariable: 'MAILROOM_SMTP_HOST', portVariable: 'MAILROOM_SMTP_PORT' },
    listen: () => smtp.listen(host, port),
  });
}

/** The IMAP listeners, each off unless its port is set (the sandbox sets the plain one: SANDBOX_DEFAULTS). */
async function startImapRole(role: RoleContext, certificates: CertificateSource | null): Promise<{ imapPort: number | null; imapsPort: number | null }> {
  const { config, services, logger } = role;
  const host = config.smtpHost;
  const common = {
    access: services.imapAccess,
    logger,
    appendLimit: config.smtpMaxSize,
    maxClients: config.imapMaxClients,
    maxClientsPerIp: config.imapMaxClientsPerIp,
    allowPlaintextAuth: config.allowPlaintextAuth,
    tls: certificates,
    // One set of shares for both listeners: a workspace's sessions and commands count once, whichever port.
    shares: createImapShares({ sessionsPerWorkspace: config.imapMaxClientsPerWorkspace, commands: config.imapCommands, commandsPerWorkspace: config.imapCommandsPerWorkspace }),
    idlePollMs: config.imapIdlePollMs,
    metrics: services.metrics,
  };
  const started: { imapPort: number | null; imapsPort: number | null } = { imapPort: null, imapsPort: null };
  for (const [name, port, secure] of [['imap', config.imapPort, false], ['imaps', config.imapsPort, true]] as const) {
    if (port === null) continue;
    const server = createImapServer({ ...common, secure });
    started[secure ? 'imapsPort' : 'imapPort'] = await startListener(role, {
      name,
      up: () => server.listening(),
      stop: () => server.close(),
      settings: { service: name.toUpperCase(), host, port, hostVariable: 'MAILROOM_SMTP_HOST', portVariable: secure ? 'MAILROOM_IMAPS_PORT' : 'MAILROOM_IMAP_PORT' },
      listen: () => server.listen(host, port),
    });
  }
  return started;
}

/**
 * SMTP submission for mail clients, with the smtp role: MAILROOM_SUBMISSION_PORT (STARTTLS) and
 * MAILROOM_SUBMISSIONS_PORT (implicit TLS) on MAILROOM_SMTP_HOST, each off while unset. Both share one set of
 * session caps (the inbound settings, counted apart from inbound sessions). The picked ports, null when off.
 */
async function startSubmissionListeners(role: RoleContext, tls: CertificateSource | null): Promise<SubmissionPorts> {
  const { config, services, logger } = role;
  const ports: SubmissionPorts = { submission: null, submissions: null };
  const wanted = [
    { key: 'submission', port: config.submissionPort, implicitTls: false, variable: 'MAILROOM_SUBMISSION_PORT' },
    { key: 'submissions', port: config.submissionsPort, implicitTls: true, variable: 'MAILROOM_SUBMISSIONS_PORT' },
  ] as const;
  if (wanted.every((w) => w.port === null)) return ports;
  const slots = createSubmissionSlots({ maxClients: config.smtpMaxClients, maxClientsPerIp: config.smtpMaxClientsPerIp, maxSessionMs: config.smtpMaxSessionMs, maxCommands: config.smtpMaxCommands, idleMs: config.smtpIdleMs, logger });
  const host = config.smtpHost;
  for (const w of wanted) {
    const port = w.port;
    if (port === null) continue;
    const server = createSubmissionServer({
      appPasswords: services.appPasswords.service,
      sessions: services.appPasswords.sessions,
      sending: services.sending,
      logger,
      hostname: config.smtpHostname,
      maxSize: config.smtpMaxSize,
      implicitTls: w.implicitTls,
      tls: tls ?? undefined,
      plaintextAuth: config.allowPlaintextAuth,
      slots,
      closeTimeoutMs: smtpCloseTimeoutMs(config),
      idleMs: config.smtpIdleMs,
    });
    ports[w.key] = await startListener(role, {
      name: w.key,
      up: () => server.listening(),
      stop: () => server.close(),
      settings: { service: `SMTP ${w.key}`, host, port, hostVariable: 'MAILROOM_SMTP_HOST', portVariable: w.variable },
      listen: () => server.listen(host, port),
      fields: (bound) => ({ host, port: bound, tls: w.implicitTls ? 'implicit' : tls ? 'starttls' : 'none' }),
    });
  }
  return ports;
}

async function startApiRole(role: RoleContext, readiness: Readiness): Promise<string> {
  const { config, services, logger } = role;
  const app = await createHttpApp(config, services, logger, readiness);
  const { httpHost: host, httpPort: port } = config;
  return startListener(role, {
    name: 'http',
    up: () => app.server.listening,
    // Close the app first (answers under way finish), then the threads its sends compose on.
    stop: async () => {
      await app.close();
      await services.composer.close();
    },
    settings: { service: 'HTTP API', host, port, hostVariable: 'MAILROOM_HTTP_HOST', portVariable: 'MAILROOM_HTTP_PORT' },
    listen: () => app.listen({ host, port }),
    fields: (url) => ({ url }),
    message: 'http api listening',
  });
}

/** What sandbox mode changes, said at start (decision 262): a sandbox must never pass for a service that delivers mail. */
export function sandboxLines(dnsServer: string): string[] {
  return [
    'SANDBOX MODE: for trying Mailroom on one machine; never for real mail.',
    `  - DNS: every lookup goes to the sandbox DNS server at ${dnsServer} (mailroom sandbox dns …),`,
    '    which asks the usual servers for names it has no record of',
    '  - outbound mail is captured, not delivered (mailroom sandbox outbox);',
    "    mail for this service's own mailboxes still arrives in them",
    '  - webhooks may go to loopback receivers (http://localhost:PORT/…); catch-alls can be set',
    '  - every HTTP answer carries the header Mailroom-Sandbox: true',
  ];
}

function logSandbox(config: Readonly<Config>, dnsServer: string, logger: Logger): void {
  logger.warn({ sandbox: true, dns_server: dnsServer }, sandboxLines(dnsServer).join('\n'));
  if (config.smtpRelay) logger.warn('MAILROOM_SMTP_RELAY is not used in sandbox mode: outbound mail is captured');
}

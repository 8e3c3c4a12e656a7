/**
 * The composition of the service: config → database → plumbing → feature modules, the function main.ts
 * starts the roles over. Transports are injected here, never imported by a module (lint enforces the
 * arrows: eslint.config.js).
 */
import type { Config } from './config/config.js';
import { createDb, SQLITE_BUSY_TIMEOUT_MS, type DbHandle } from './db/database.js';
import { createGroupCommit, type GroupCommit } from './db/group-commit.js';
import { asWork, type Work } from './db/tables.js';
import { migrateToLatest } from './db/migrator.js';
import { createQueue, type Queue } from './jobs/queue.js';
import { createJobWakeups, type JobWakeups } from './jobs/wakeups.js';
import type { JobHandler } from './jobs/worker.js';
import { systemClock, type Clock } from './lib/clock.js';
import type { Logger } from './lib/logger.js';
import { readFileSync } from 'node:fs';
import { cachingResolver, createDnsResolver } from './lib/dns.js';
import { createLogger } from './lib/logger.js';
import { createMetrics, noMetrics, type Metrics } from './lib/metrics.js';
import { createPublicKey } from 'node:crypto';
import { createAuditLog, type AuditLog } from './modules/audit/audit.service.js';
import { createAppPasswordsModule, type AppPasswordsModule } from './modules/app-passwords/app-passwords.module.js';
import { createAppPasswordStore } from './modules/app-passwords/app-password.store.js';
import { createLoginThrottle } from './modules/tenancy/auth.service.js';
import { createAuditStore } from './modules/audit/audit.store.js';
import { createDomainService, type DomainService } from './modules/domains/domain.service.js';
import { createDomainStore, verifiedDomainsSelect } from './modules/domains/domain.store.js';
import { createServiceTokenStore } from './modules/transactional/service-token.store.js';
import { createEventStore } from './modules/events/event.store.js';
import { createEventsService, type EventsService } from './modules/events/events.service.js';
import { createEventSignal, type EventSignal } from './modules/events/event-signal.js';
import { createEventStreamService, type EventStreamService } from './modules/events/event-stream.service.js';
import { afterCommit } from './db/commit-hooks.js';
import { createNotifications, type Notifications } from './db/notifications.js';
import { createListService, type ListService } from './modules/lists/list.service.js';
import { createListStore } from './modules/lists/list.store.js';
import { createSuppressionService, type SuppressionService } from './modules/suppressions/suppression.service.js';
import { createUnsubscribeService, type UnsubscribeService } from './modules/suppressions/unsubscribe.service.js';
import { createUnsubscribeTokens } from './lib/unsubscribe-token.js';
import { createInProcessAnalyzer, type MessageAnalyzer } from './modules/messages/analysis.js';
import { createThreadedAnalyzer } from './modules/messages/analysis-pool.js';
import { createFairGate, type FairGate } from './lib/fair-gate.js';
import { createComposer } from './modules/sending/compose-pool.js';
import { createMailauthAuthenticator, type MessageAuthenticator } from './modules/messages/authentication.js';
import { createInboundService, type InboundService } from './modules/messages/inbound.service.js';
import { createSpamCheck } from './modules/messages/spam-check.js';
import { createSpamLearnHandler, createSpamLearning } from './modules/messages/spam-learning.js';
import { createRspamdScanner } from './lib/rspamd.js';
import { createMailStore } from './modules/mail/mail.store.js';
import { createMailSignal, onMailChanges, type MailSignal } from './modules/mail/mail-changes.js';
import { createMessageService, type MessageService } from './modules/messages/message.service.js';
import { createBulkService, type BulkService } from './modules/messages/bulk.service.js';
import { createLabelService, type LabelService } from './modules/messages/label.service.js';
import { createImapAccessService, type ImapAccessService } from './modules/imap-access/imap-access.service.js';
import { createMailboxTransferService, type MailboxTransferService } from './modules/messages/mailbox-transfer.service.js';
import { createSearchRunner } from './modules/messages/search-runner.js';
import { createDeliveryHandler } from './modules/sending/delivery.handler.js';
import { createInProcessSigner, createThreadedSigner, type MessageSigner } from './modules/sending/signing-pool.js';
import { createDraftService, type DraftService } from './modules/sending/draft.service.js';
import type { RouteResolver, SmtpDeliverer } from './modules/sending/delivery.types.js';
import { createRouteResolver } from './modules/sending/routes.resolver.js';
import { createMtaStsPolicies } from './modules/sending/mta-sts.policies.js';
import { createMtaStsFetcher } from './transports/http/mta-sts.client.js';
import { createSendingService, type SendingService } from './modules/sending/sending.service.js';
import { candidatesSelect } from './modules/lists/list.store.js';
import { createReturnPaths, type ReturnPaths } from './lib/verp.js';
import { checkSecretKey, loadSecretKey } from './modules/secrets/secret-key.js';
import { createSecretKeyStore } from './modules/secrets/secret-key.store.js';
import { createSecretBox, type SecretBox } from './lib/secret-box.js';
import { createSmtpDeliverer } from './transports/smtp/outbound.client.js';
import { createMailboxService, type MailboxService } from './modules/mailboxes/mailbox.service.js';
import { createTenancyModule, type TenancyModule } from './modules/tenancy/tenancy.module.js';
import { createTenancyStore, heldWorkspacesSelect, membershipRoleSelect, workspaceStateSelect } from './modules/tenancy/tenancy.store.js';
import { createWorkspaceLifecycle, type WorkspaceLifecycle } from './modules/tenancy/workspace-lifecycle.service.js';
import { createGoneWorkspaces } from './modules/tenancy/workspace-state.js';
import { createServiceTokenService, type ServiceTokenService } from './modules/transactional/service-token.service.js';
import { createTransactionalService, type TransactionalService } from './modules/transactional/transactional.service.js';
import { createWebhookStore } from './modules/webhooks/webhook.store.js';
import { createWebhooksModule, type WebhooksModule } from './modules/webhooks/webhooks.module.js';
import { createWebhookClient } from './transports/http/webhook.client.js';
import { createSandboxCapture, createSandboxModule, SANDBOX_WEBHOOK_CIDRS, type SandboxModule } from './modules/sandbox/sandbox.module.js';
import { createSandboxStore } from './modules/sandbox/sandbox.store.js';
import { startSandboxDnsServer, type SandboxDnsServer } from './transports/dns/sandbox-dns.server.js';
import { createQuotaService, type QuotaService } from './modules/quotas/quota.service.js';
import { createQuotaStore } from './modules/quotas/quota.store.js';
import { createRetentionService, type RetentionService } from './modules/retention/retention.service.js';
import { createRetentionSweep, type RetentionSweep } from './modules/retention/retention.sweep.js';
import { createAcmeService, type AcmeService } from './modules/certificates/acme.service.js';
import { createCertificateStore } from './modules/certificates/certificate.store.js';
import { createCertificateHolder, type CertificateSource } from './lib/tls-certificates.js';
import { createReportService, type ReportService } from './modules/reports/report.service.js';
import { createReportStore } from './modules/reports/report.store.js';

/** The feature services: what the transports and the CLI call (the rules of the product). */
export interface FeatureServices {
  tenancy: TenancyModule;
  /** Who changed what in a workspace: each service records its changes in their own transaction. */
  audit: AuditLog;
  events: EventsService;
  /** Follows a workspace's committed events (the SSE stream). */
  eventStream: EventStreamService;
  mailboxes: MailboxService;
  lists: ListService;
  /** The addresses a workspace no longer sends to (hard bounces, complaints, manual entries). */
  suppressions: SuppressionService;
  /** One-click unsubscribe (RFC 8058): the links' and mailto addresses' tokens, and what using one does. */
  unsubscribes: UnsubscribeService;
  messages: MessageService;
  /** Many messages organised in one request, and the undo of it (bulk.service.ts). */
  bulk: BulkService;
  /** The workspace's labels: colours, bounded counts, delete (label.service.ts). */
  labels: LabelService;
  /** A mailbox's mail out to mbox files and in from mbox or Maildir (the operator's export and import). */
  mailTransfer: MailboxTransferService;
  inbound: InboundService;
  domains: DomainService;
  sending: SendingService;
  drafts: DraftService;
  serviceTokens: ServiceTokenService;
  transactional: TransactionalService;
  webhooks: WebhooksModule;
  /** Sandbox mode's records, captured mail and catch-alls; null unless the service runs with --sandbox. */
  sandbox: SandboxModule | null;
  /** The operator's controls of whole workspaces: list, suspend, resume, delete (mailroom admin …). */
  workspaceLifecycle: WorkspaceLifecycle;
  /** Quotas per workspace and usage (`usageOf` for any module that shows a workspace's usage). */
  quotas: QuotaService;
  /** Retention: each workspace's periods (`service`) and the sweep the worker role runs. */
  retention: { service: RetentionService; sweep: RetentionSweep };
  /** Mail clients' credentials (one per mailbox and client), their logins and the sessions opened with them. */
  appPasswords: AppPasswordsModule;
  /** What IMAP sessions do with their mailbox (folders, flags, keywords) over the mail store. */
  imapAccess: ImapAccessService;
  /** DMARC aggregate and TLS reports received into mailboxes, as figures per sending domain. */
  reports: ReportService;
}

/** The plumbing the features run on: the database, commits, queue, wake-ups and threads that main.ts starts and stops. */
export interface Plumbing {
  /**
   * ACME (MAILROOM_ACME_DIRECTORY_URL): the certificate source it keeps current and the service that does it
   * (main.ts starts it and hands the source to the TLS listeners); null when ACME is off.
   */
  acme: { service: AcmeService; certificates: CertificateSource } | null;
  database: DbHandle;
  clock: Clock;
  queue: Queue;
  /** Shared commits of the hot write paths (inbound storage, sends; on SQLite also delivery state and job settlement). */
  commits: GroupCommit;
  /**
   * Shared commits of the worker (delivery state, job settlement): on PostgreSQL a group of its own, so
   * that a delivery's state change never waits behind a batch of sends; on SQLite `commits` itself.
   */
  workerCommits: GroupCommit;
  /** Parser threads of inbound mail (started by the first message; close() stops them). */
  analyzer: MessageAnalyzer;
  /** Turns at the analyzer: a share per recipient workspace, a cap in all, granted round-robin. */
  analysisGate: FairGate;
  /** DKIM signing threads of outbound mail (started by the first signature; close() stops them). */
  signer: MessageSigner;
  /** Threads that compose large outbound messages (started by the first; close() stops them). */
  composer: { close(): Promise<void> };
  /** The outbound SMTP client (its cached connections are closed at shutdown). */
  deliverer: SmtpDeliverer;
  /** Producers in this process announce committed work here; a worker in this process subscribes its `wake`. */
  wakeups: JobWakeups;
  /** Rung after a transaction with events commits, here or (through `notifications`) in another process. */
  eventSignal: EventSignal;
  /** Rung after a transaction that changed a mailbox's folders commits, here or in another process (mail clients' IDLE). */
  mailSignal: MailSignal;
  /** PostgreSQL: LISTEN/NOTIFY between the processes sharing the database (closed by `database.destroy`). */
  notifications: Notifications | null;
  /** Job handlers the worker role runs. */
  handlers: JobHandler[];
  /** Outbound mail's keyed VERP return paths (decisions 208, 414). */
  returnPaths: ReturnPaths;
  /** Seals and opens secrets at rest under MAILROOM_SECRET_KEY. */
  secretBox: SecretBox;
  /** Sandbox mode: its DNS server, which every lookup of this process asks (closed by `database.destroy`). */
  sandboxDns: SandboxDnsServer | null;
  /** What this process counts for GET /metrics; records nothing without MAILROOM_METRICS_PORT. */
  metrics: Metrics;
}

/**
 * Both halves in one object, as tests and the CLI reach them today. Code that needs only the features
 * (the HTTP app) takes `FeatureServices`.
 */
export type Services = FeatureServices & Plumbing;

/** Composition root: open the database, apply migrations, wire the feature modules. */
export async function createServices(
  config: Readonly<Config>,
  options: {
    clock?: Clock;
    migrate?: boolean;
    logger?: Logger;
    authenticator?: MessageAuthenticator;
    deliverer?: SmtpDeliverer;
    routes?: RouteResolver;
    /**
     * Tests only: the CA that outbound SMTP and MTA-STS policy fetches trust instead of the system's, and the port
     * policies are fetched from instead of 443, so a loopback policy server and SMTP peer under a test CA stand in.
     */
    outboundTls?: { ca: string; mtaStsPort: number };
  } = {},
): Promise<Services> {
  // Before the database opens: with PostgreSQL and no key there is nothing to open it for.
  const box = createSecretBox(loadSecretKey(config));
  const opened = createDb(config.databaseUrl, { pgPrepare: config.pgPrepare });
  const { db, dialect } = opened;
  const clock = options.clock ?? systemClock;
  // Every module sees the pool as a handle that names no table; each store views it over its own tables.
  // The pool as every module sees it: a handle that names no table (each store views it over its own).
  const work = asWork(db);
  const logger = options.logger ?? createLogger('silent');
  const metrics = config.metricsPort === null ? noMetrics : createMetrics({ onReadError: (source, err) => logger.warn({ err, source }, 'a metrics read failed') });
  try {
    if (options.migrate !== false) await migrateToLatest(db);
    // A process with another key than the one the stored secrets were sealed with refuses to start (exit 78).
    await checkSecretKey(work, createSecretKeyStore(), box, clock);
  } catch (err) {
    await opened.destroy();
    throw err;
  }
  const sandboxStore = createSandboxStore();
  const sandbox = config.sandbox ? createSandboxModule({ work, store: sandboxStore, mailboxes: { mailboxIdByAddress: (...a) => mail.mailboxIdByAddress(...a), mailboxAddresses: (...a) => mail.mailboxAddresses(...a) }, clock }) : null;
  let sandboxDns: SandboxDnsServer | null = null;
  try {
    // Upstream: the servers the operator named, else the system's; every lookup of this process asks the sandbox's.
    if (sandbox) sandboxDns = await startSandboxDnsServer({ host: '127.0.0.1', port: config.sandboxDnsPort, lookup: sandbox.dns.lookup, upstream: config.dnsServers, logger });
  } catch (err) {
    await opened.destroy();
    throw err;
  }
  const dnsServers = sandboxDns ? [sandboxDns.address] : config.dnsServers;
  const eventStore = createEventStore({ dialect });
  const events = createEventsService({ clock, store: eventStore });
  // A token's lookup reads its workspace's state in the same statement (the tenancy store's part).
  const serviceTokenStore = createServiceTokenStore({ workspaceState: workspaceStateSelect });
  const wakeups = createJobWakeups();
  const eventSignal = createEventSignal();
  const mailSignal = createMailSignal();
  // Its grants are checked by the tenancy module made below (only once a stream is open).
  const eventStream = createEventStreamService({
    work,
    store: eventStore,
    dialect,
    signal: eventSignal,
    heartbeatMs: config.eventHeartbeatMs,
    caps: { perSession: config.eventStreamsPerSession, perWorkspace: config.eventStreamsPerWorkspace, total: config.eventStreamsMax },
    checkGrants: (grants) => tenancy.auth.checkGrants(grants),
    onError: (err) => logger.error({ err }, 'event stream read or credential check failed'),
  });
  // Filled below: the worker's queues, woken all at once after the listener reconnects.
  const handlers: JobHandler[] = [];
  const notifications = dialect.sharedByProcesses
    ? createNotifications({
        url: config.databaseUrl,
        db,
        log: logger,
        onTopic: (topic) => {
          if (topic.startsWith('events:')) eventSignal.notify(topic.slice('events:'.length));
          else if (topic.startsWith('queue:')) wakeups.notify(topic.slice('queue:'.length));
          else if (topic.startsWith('credentials:')) {
            eventStream.credentialsChanged(topic.slice('credentials:'.length));
            appPasswords.sessions.userChanged(topic.slice('credentials:'.length));
          } else if (topic.startsWith('app-passwords:')) appPasswords.sessions.workspaceChanged(topic.slice('app-passwords:'.length));
          else if (topic.startsWith('mail:')) {
            const [workspaceId, mailboxId] = topic.slice('mail:'.length).split(':');
            if (workspaceId && mailboxId) mailSignal.notify(workspaceId, mailboxId);
          }
        },
        onReconnect: () => {
          eventSignal.notifyAll();
          mailSignal.notifyAll();
          eventStream.recheckAll();
          appPasswords.sessions.recheckAll();
          for (const handler of handlers) wakeups.notify(handler.queue);
        },
      })
    : null;
  events.subscribe(signalCommittedEvents(eventSignal, notifications));
  // Once per mailbox and transaction, after the commit (the mail store rings it where a folder's modseq is raised);
  // other processes hear the same mailbox (publishSoon sends each topic once per turn of the event loop).
  onMailChanges(db, (workspaceId, mailboxId) => {
    mailSignal.notify(workspaceId, mailboxId);
    notifications?.publishSoon(`mail:${workspaceId}:${mailboxId}`);
  });
  // A job enqueued here wakes this process's worker after commit, and the workers of the others.
  const wake = (name: string): void => {
    wakeups.notify(name);
    notifications?.publishSoon(`queue:${name}`);
  };
  // A user's streams end with their session or membership: in this process at once, in the others by NOTIFY.
  const tenancyStore = createTenancyStore({ dialect });
  const audit = createAuditLog({ store: createAuditStore(), work, clock, retentionDays: config.auditRetentionDays });
  const tenancy = createTenancyModule({
    work,
    store: tenancyStore,
    clock,
    audit,
    loginLimits: { perAddress: config.loginFailuresPerAddress, perAccount: config.loginFailuresPerAccount },
    credentialsChanged: (userId) => {
      eventStream.credentialsChanged(userId);
      appPasswords.sessions.userChanged(userId);
      notifications?.publishSoon(`credentials:${userId}`);
    },
  });
  // Mail clients' open sessions end with their credential: here at once, in the other processes by NOTIFY.
  const appPasswordsChanged = (workspaceId: string): void => {
    appPasswords.sessions.workspaceChanged(workspaceId);
    notifications?.publishSoon(`app-passwords:${workspaceId}`);
  };
  const appPasswordStore = createAppPasswordStore({ workspaceState: workspaceStateSelect, membershipRole: membershipRoleSelect });
  const appPasswords: AppPasswordsModule = createAppPasswordsModule({
    work,
    store: appPasswordStore,
    mailboxes: { mailboxIdByAddress: (...a) => mail.mailboxIdByAddress(...a), mailboxAddresses: (...a) => mail.mailboxAddresses(...a), mailboxForRecipient: (...a) => mail.mailboxForRecipient(...a) },
    clock,
    audit,
    throttle: createLoginThrottle({ work, store: tenancyStore, clock, limits: { perAddress: config.loginFailuresPerAddress, perAccount: config.loginFailuresPerAccount } }),
    servers: { host: config.smtpHostname, imap_port: config.imapPort, imaps_port: config.imapsPort, submission_port: config.submissionPort, submissions_port: config.submissionsPort },
    ended: appPasswordsChanged,
    onError: (err) => logger.error({ err }, 'app password session check failed'),
  });
  const commits = createGroupCommit(db);
  // PostgreSQL runs transactions side by side; the two groups share no row (sends insert outbound and
  // job rows, the worker changes existing ones), so they cannot deadlock. SQLite has one writer: one group.
  const workerCommits = dialect.supportsRowLocks ? createGroupCommit(db) : commits;
  const listStore = createListStore();
  const lists = createListService({ work, store: listStore, clock, audit });
  const resolve = createDnsResolver(dnsServers);
  const authenticator = options.authenticator ?? createMailauthAuthenticator({ resolve: cachingResolver(resolve), hostname: config.smtpHostname });
  // An authenticator given by the caller runs where it was made; otherwise parser threads do the work.
  const analyzer =
    options.authenticator || config.smtpParserThreads === 0
      ? createInProcessAnalyzer(authenticator)
      : createThreadedAnalyzer({ threads: config.smtpParserThreads, dnsServers, hostname: config.smtpHostname, fallback: authenticator, logger });
  // VERP return paths live in the first hosted domain, whose MX points at this service.
  const returnPathDomain = config.hostedDomains[0] ?? config.smtpHostname;
  const domainStore = createDomainStore({ dialect });
  const domains = createDomainService({
    work,
    store: domainStore,
    mailboxes: { mailboxesInDomain: (...a) => mail.mailboxesInDomain(...a) },
    tokens: serviceTokenStore,
    clock,
    events,
    resolve,
    hostedDomains: config.hostedDomains,
    returnPathDomain,
    inboundHost: config.smtpHostname,
    hostedKey: operatorDkimKey(config),
    hostedSelector: config.dkimSelector,
    box,
    audit,
  });
  // Claims pass over the jobs of suspended workspaces and of those being deleted (the tenancy store's part).
  const queue = createQueue({ work, dialect, clock, leaseMs: config.leaseMs, wake, heldWorkspaces: heldWorkspacesSelect });
  // The mail store: the only code that names the mail tables. Delivery runs' writes and job settlements share the
  // worker's commits; the outbound list entries a send could match are the lists module's part of one statement.
  const mail = createMailStore({ work, dialect, clock, logger, commits: workerCommits, queue, emit: (w, event) => events.emit(w, event), listCandidates: candidatesSelect, verifiedDomains: verifiedDomainsSelect });
  // A workspace being deleted takes no new mailbox and no quota: it is gone for everyone but the purge.
  const workspaceExists = async (workspaceId: string) => ![undefined, 'deleting'].includes((await tenancyStore.findWorkspace(work, workspaceId))?.state);
  const quotas = createQuotaService({ work, store: createQuotaStore(), mail, clock, defaults: config.quotaDefaults, workspaceExists, audit });
  const searches = createSearchRunner({
    database: { work, dialect, sqliteFile: opened.sqliteFile, busyTimeoutMs: SQLITE_BUSY_TIMEOUT_MS },
    store: mail,
    limits: { timeoutMs: config.searchTimeoutMs, threads: config.searchThreads, concurrency: config.searchConcurrency, perWorkspace: config.searchConcurrencyPerWorkspace },
    logger,
  });
  const database: DbHandle = {
    ...opened,
    async destroy() {
      // The reader threads hold connections of their own to the database.
      await searches.close();
      await sandboxDns?.close();
      await notifications?.close();
      await opened.destroy();
    },
  };
  const returnPaths = createReturnPaths(box, returnPathDomain);
  const composer = createComposer({ threads: config.bodyThreads, logger });
  const sending = createSendingService({
    work,
    clock,
    events,
    mail,
    queue,
    domains,
    returnPaths,
    commits,
    compose: composer.compose,
    quota: quotas,
    undoSendMs: config.undoSendSeconds * 1000,
    fullText: dialect.fullText,
  });
  const drafts = createDraftService({ work, mail, clock, sending });
  // Workspaces being deleted, read at most once a second per process: their mailboxes refuse mail.
  const gone = createGoneWorkspaces(work, (w) => tenancyStore.deletingWorkspaceIds(w));
  // rspamd (MAILROOM_RSPAMD_URL): scores inbound mail, and learns from moves into and out of spam.
  const spamScanner = config.rspamd ? createRspamdScanner(config.rspamd) : null;
  // Moves into and out of Spam (API and IMAP) teach rspamd through the queue; nothing to teach without it.
  const learning = spamScanner ? createSpamLearning(queue) : undefined;
  const analysisGate = createFairGate({ total: config.analysisSlots, perKey: config.analysisSlotsPerWorkspace });
  // One-click unsubscribe links and mailto addresses: keyed as the return paths are, in their domain.
  const unsubscribeTokens = createUnsubscribeTokens(box, config.publicUrl, returnPathDomain);
  const unsubscribes = createUnsubscribeService({ work, clock, tokens: unsubscribeTokens, mail, events, workspaceGone: (workspaceId) => gone.has(workspaceId) });
  const reportStore = createReportStore();
  const reports = createReportService({
    work,
    clock,
    logger,
    store: reportStore,
    queue,
    mail,
    domains: { get: (tenant, id) => domains.get(tenant, id), namesOf: async (workspaceId) => (await domainStore.list(work, workspaceId)).map((d) => d.domain.toLowerCase()) },
  });
  const inbound = createInboundService({
    work,
    clock,
    events,
    store: mail,
    lists,
    analyzer,
    analysisGate,
    logger,
    returnPaths,
    isReturnPathHost: (host) => domains.isReturnPathHost(host),
    unsubscribe: { tokens: unsubscribeTokens, service: unsubscribes },
    commits,
    catchAll: sandbox?.catchAlls.find,
    workspaceGone: (workspaceId) => gone.has(workspaceId),
    storage: quotas,
    domainReports: reports,
    spamCheck: spamScanner && config.rspamd ? createSpamCheck({ scanner: spamScanner, onError: config.rspamd.onError, hostname: config.smtpHostname, logger, metrics }) : undefined,
  });
  // Sandbox mode: outbound mail is captured instead of sent, whatever the relay or MX records say.
  const capture = sandbox ? createSandboxCapture({ work, store: sandboxStore, clock, logger, inbound }) : null;
  const deliverer = options.deliverer ?? capture?.deliverer ?? createSmtpDeliverer({ heloName: config.smtpHostname, ca: options.outboundTls?.ca });
  const mtaStsFetch = createMtaStsFetcher({ resolve, allowCidrs: config.deliveryAllowCidrs, port: options.outboundTls?.mtaStsPort, ca: options.outboundTls?.ca });
  const mtaSts = createMtaStsPolicies({ resolve: cachingResolver(resolve), fetchPolicy: mtaStsFetch, clock, logger });
  const signer = config.dkimThreads === 0 ? createInProcessSigner() : createThreadedSigner({ threads: config.dkimThreads, perWorkspace: config.dkimSigningsPerWorkspace, logger });
  const delivery = createDeliveryHandler({
    work,
    mail,
    clock,
    logger,
    domains,
    routes: options.routes ?? capture?.routes ?? createRouteResolver({ resolve: cachingResolver(resolve), mxPort: config.mxPort, relay: config.smtpRelay, allowCidrs: config.deliveryAllowCidrs, mtaSts }),
    deliverer,
    signer,
    returnPaths,
    unsubscribe: unsubscribeTokens,
    retryBaseMs: config.deliveryRetryBaseMs,
    maxAgeMs: config.deliveryMaxAgeMs,
    workspaceConcurrency: config.fairQueue.deliveryWorkspaceConcurrency,
    metrics,
  });
  const webhookStore = createWebhookStore({ dialect });
  const webhooks = createWebhooksModule({
    work,
    store: webhookStore,
    feed: eventStore,
    clock,
    logger,
    queue,
    events,
    // Uncached: every address check must see the answer the pinned connection will use.
    resolve,
    allowCidrs: sandbox ? [...config.webhookAllowCidrs, ...SANDBOX_WEBHOOK_CIDRS] : config.webhookAllowCidrs,
    sender: createWebhookClient(),
    backoffBaseMs: config.webhookBackoffBaseMs,
    timeoutMs: config.webhookTimeoutMs,
    caps: config.fairQueue,
    wake,
    box,
    audit,
    metrics,
  });
  handlers.push(delivery, webhooks.handler, reports.handler);
  if (spamScanner) handlers.push(createSpamLearnHandler({ work, store: mail, scanner: spamScanner, logger, metrics }));
  metrics.read({
    analysis: () => {
      const threads = analyzer.threadStats?.();
      return { waiting: analysisGate.waiting, active: analysisGate.active, threadQueue: threads?.queued ?? 0, threadRestarts: threads?.restarts ?? 0 };
    },
    eventStreams: () => eventStream.stats().open,
    databasePool: () => opened.poolStats?.() ?? null,
    // `writes`: inbound storage and sends; `worker`: delivery state and job settlement (one group with `writes` on SQLite).
    commitQueues: (): Record<string, number> => (workerCommits === commits ? { writes: commits.waiting() } : { writes: commits.waiting(), worker: workerCommits.waiting() }),
  });
  const retention = {
    service: createRetentionService({ work, mail, policy: config.retention, audit }),
    sweep: createRetentionSweep({
      work,
      dialect,
      clock,
      logger,
      policy: config.retention,
      batch: config.retention.batch,
      intervalMs: config.retention.intervalMs,
      mail,
      events: eventStore,
      webhooks: createWebhookStore({ dialect }),
      queue,
      queues: () => handlers.map((h) => h.queue),
      tokens: serviceTokenStore,
    }),
  };
  if (options.migrate !== false) await sealPlaintextSecrets({ database, domains, webhooks: webhooks.service, logger });
  const messages = createMessageService({ work, store: mail, searches, learning });
  const bulk = createBulkService({ work, store: mail, messages, learning });
  return {
    database,
    clock,
    tenancy,
    audit,
    events,
    queue,
    commits,
    workerCommits,
    sending,
    drafts,
    serviceTokens: createServiceTokenService({
      work,
      store: serviceTokenStore,
      domains: domainStore,
      mailboxes: mail,
      clock,
      audit,
      suspensionReason: async (workspaceId) => (await tenancyStore.findWorkspace(work, workspaceId))?.state_reason ?? null,
    }),
    transactional: createTransactionalService({ work, store: serviceTokenStore, mail, clock, sending }),
    deliverer,
    handlers,
    eventSignal,
    mailSignal,
    notifications,
    eventStream,
    webhooks,
    wakeups,
    mailboxes: createMailboxService({
      work,
      clock,
      domains,
      store: mail,
      workspaceExists,
      quota: quotas,
      removed: appPasswordsChanged,
    }),
    domains,
    lists,
    suppressions: createSuppressionService({ work, clock, mail, audit }),
    unsubscribes,
    messages,
    bulk,
    labels: createLabelService({ work, store: mail, bulk }),
    mailTransfer: createMailboxTransferService({ work, store: mail, clock, maxMessageBytes: config.smtpMaxSize }),
    returnPaths,
    secretBox: box,
    inbound,
    sandbox,
    sandboxDns,
    acme: acmeModule(config, { work, box, clock, logger }),
    workspaceLifecycle: createWorkspaceLifecycle({
      work,
      audit,
      store: tenancyStore,
      clock,
      usage: (w, ids, since) => mail.workspacesMailUsage(w, ids, since),
      // Each module's rows through its own store; the order keeps every foreign key's cascade small.
      purges: [
        { name: 'jobs', batch: (w, id, n) => queue.purgeWorkspaceBatch(w, id, n) },
        { name: 'webhooks', batch: (w, id, n) => webhookStore.purgeWorkspaceBatch(w, id, n) },
        { name: 'events', batch: (w, id, n) => eventStore.purgeWorkspaceBatch(w, id, n) },
        { name: 'transactional', batch: (w, id, n) => serviceTokenStore.purgeWorkspaceBatch(w, id, n) },
        { name: 'sandbox', batch: (w, id, n) => sandboxStore.purgeWorkspaceBatch(w, id, n) },
        { name: 'app-passwords', batch: (w, id, n) => appPasswordStore.purgeWorkspaceBatch(w, id, n) },
        { name: 'reports', batch: (w, id, n) => reportStore.purgeWorkspaceBatch(w, id, n) },
        { name: 'mail', batch: (w, id, n) => mail.purgeMailBatch(w, id, n) },
        { name: 'lists', batch: (w, id, n) => listStore.purgeWorkspaceBatch(w, id, n) },
        { name: 'domains', batch: (w, id, n) => domainStore.purgeWorkspaceBatch(w, id, n) },
      ],
      gone,
      stateChanged: appPasswordsChanged,
    }),
    retention,
    appPasswords,
    imapAccess: createImapAccessService({ work, store: mail, drafts, appPasswords: appPasswords.service, sessions: appPasswords.sessions, storage: quotas, search: searches, changes: mailSignal, logger, learning }),
    analyzer,
    analysisGate,
    signer,
    composer,
    quotas,
    metrics,
    reports,
  };
}


/**
 * Ring the event signal once per workspace and transaction, after the commit: here at once, in other processes
 * through a NOTIFY sent after the commit (batched per turn of the event loop), so the writing transaction, often a
 * shared group commit on the ingest path, carries no extra statement.
 */
function signalCommittedEvents(signal: EventSignal, notifications: Notifications | null): (trx: Work, event: { workspaceId: string }) => Promise<void> {
  const rung = new WeakMap<Work, Set<string>>();
  return async (trx, event) => {
    let done = rung.get(trx);
    if (!done) rung.set(trx, (done = new Set()));
    if (done.has(event.workspaceId)) return;
    done.add(event.workspaceId);
    await afterCommit(trx, () => {
      signal.notify(event.workspaceId);
      notifications?.publishSoon(`events:${event.workspaceId}`);
    });
  };
}

/**
 * Start-up, after migrating: encrypt the secrets stored before encryption at rest. Migrations do not know the
 * key, so this runs here (decision 206); each row is replaced only if unchanged, so concurrent starts agree.
 */
async function sealPlaintextSecrets(deps: { database: DbHandle; domains: DomainService; webhooks: WebhooksModule['service']; logger: Logger }): Promise<void> {
  try {
    const keys = await deps.domains.sealStoredKeys();
    const endpoints = await deps.webhooks.sealStoredSecrets();
    if (keys + endpoints > 0) deps.logger.info({ dkim_keys: keys, webhook_endpoints: endpoints }, 'encrypted secrets stored in plaintext');
  } catch (err) {
    await deps.database.destroy();
    throw err;
  }
}

/** The operator's DKIM key for hosted domains (MAILROOM_DKIM_KEY), with its public half for the DNS record. */
function operatorDkimKey(config: Readonly<Config>): { selector: string; privateKey: string; publicKey: string } | undefined {
  if (!config.dkimKeyFile) return undefined;
  const privateKey = readFileSync(config.dkimKeyFile, 'utf8');
  const publicKey = createPublicKey(privateKey).export({ type: 'spki', format: 'der' }).toString('base64');
  return { selector: config.dkimSelector, privateKey, publicKey };
}

/** The ACME service and the certificate source it offers what it obtains to; null when ACME is off. */
function acmeModule(config: Readonly<Config>, deps: { work: Work; box: SecretBox; clock: Clock; logger: Logger }): Plumbing['acme'] {
  if (!config.acme) return null;
  const certificates = createCertificateHolder(deps.logger);
  const service = createAcmeService({ ...deps, store: createCertificateStore(), config: config.acme, holder: certificates, checkMs: config.tlsCheckMs });
  return { service, certificates };
}

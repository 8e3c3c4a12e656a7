import type { FastifyInstance } from 'fastify';
import type { Config } from './config/config.js';
import { createDb, ping, type DbHandle } from './db/database.js';
import { createGroupCommit, type GroupCommit } from './db/group-commit.js';
import { migrateToLatest } from './db/migrator.js';
import { createQueue, type Queue } from './jobs/queue.js';
import { createJobWakeups, type JobWakeups } from './jobs/wakeups.js';
import { createWorker, type JobHandler, type Worker } from './jobs/worker.js';
import { systemClock, type Clock } from './lib/clock.js';
import type { Logger } from './lib/logger.js';
import { readFileSync } from 'node:fs';
import { cachingResolver, createDnsResolver } from './lib/dns.js';
import { createLogger } from './lib/logger.js';
import { createPublicKey } from 'node:crypto';
import { createDomainService, type DomainService } from './modules/domains/domain.service.js';
import { createEventsService, type EventsService } from './modules/events/events.service.js';
import { createListService, type ListService } from './modules/lists/list.service.js';
import { createInProcessAnalyzer, type MessageAnalyzer } from './modules/messages/analysis.js';
import { createThreadedAnalyzer } from './modules/messages/analysis-pool.js';
import { createMailauthAuthenticator, type MessageAuthenticator } from './modules/messages/authentication.js';
import { createInboundService, type InboundService } from './modules/messages/inbound.service.js';
import { createStoreThread, type StoreThread } from './modules/messages/store-thread.js';
import { createMessageStore } from './modules/messages/message-store.js';
import { createMessageService, type MessageService } from './modules/messages/message.service.js';
import { createPageCache } from './modules/messages/page-cache.js';
import { createDeliveryHandler } from './modules/sending/delivery.handler.js';
import { createInProcessSigner, createThreadedSigner, type MessageSigner } from './modules/sending/signing-pool.js';
import { createDraftService, type DraftService } from './modules/sending/draft.service.js';
import type { RouteResolver, SmtpDeliverer } from './modules/sending/delivery.types.js';
import { createRouteResolver, relayTlsInsecure } from './modules/sending/routes.resolver.js';
import { createSendingService, type SendingService } from './modules/sending/sending.service.js';
import { createReturnPaths, type ReturnPaths } from './modules/sending/verp.js';
import { checkSecretKey, loadSecretKey } from './modules/secrets/secret-key.js';
import { createSecretBox, type SecretBox } from './lib/secret-box.js';
import { createSmtpDeliverer } from './transports/smtp/outbound.client.js';
import { createInboundSmtpServer } from './transports/smtp/inbound.server.js';
import { createMailboxService, type MailboxService } from './modules/mailboxes/mailbox.service.js';
import { createMaintenance, type Maintenance } from './modules/tenancy/maintenance.js';
import { createTenancyModule, type TenancyModule } from './modules/tenancy/tenancy.module.js';
import { createServiceTokenService, type ServiceTokenService } from './modules/transactional/service-token.service.js';
import { createTransactionalService, type TransactionalService } from './modules/transactional/transactional.service.js';
import { createWebhooksModule, type WebhooksModule } from './modules/webhooks/webhooks.module.js';
import { buildApp } from './transports/http/app.js';
import { createWebhookClient } from './transports/http/webhook.client.js';

import type { ProcessRole } from './config/roles.js';
// The role list lives in a module of its own so the CLI can name it without loading the service.
export { ROLES, type ProcessRole } from './config/roles.js';

export interface Services {
  database: DbHandle;
  clock: Clock;
  tenancy: TenancyModule;
  events: EventsService;
  queue: Queue;
  /** Shared commits of the hot write paths (inbound storage, sends; on SQLite also delivery state and job settlement). */
  commits: GroupCommit;
  /**
   * Shared commits of the worker (delivery state, job settlement): on PostgreSQL a group of its own, so
   * that a delivery's state change never waits behind a batch of sends; on SQLite `commits` itself.
   */
  workerCommits: GroupCommit;
  mailboxes: MailboxService;
  lists: ListService;
  messages: MessageService;
  inbound: InboundService;
  /** Parser threads of inbound mail (started by the first message; close() stops them). */
  analyzer: MessageAnalyzer;
  /** The thread inbound mail is stored on, when asked for (`startService` starts it with the smtp role; close() stops it). */
  storeThread: StoreThread | null;
  /** DKIM signing threads of outbound mail (started by the first signature; close() stops them). */
  signer: MessageSigner;
  domains: DomainService;
  sending: SendingService;
  drafts: DraftService;
  serviceTokens: ServiceTokenService;
  transactional: TransactionalService;
  /** The outbound SMTP client (its cached connections are closed at shutdown). */
  deliverer: SmtpDeliverer;
  webhooks: WebhooksModule;
  /** Producers in this process announce committed work here; a worker in this process subscribes its `wake`. */
  wakeups: JobWakeups;
  /** Job handlers the worker role runs. */
  handlers: JobHandler[];
  /** Outbound mail's keyed VERP return paths (contract §5). */
  returnPaths: ReturnPaths;
  /** Seals and opens secrets at rest under MAILROOM_SECRET_KEY. */
  secretBox: SecretBox;
}

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
    /** Store inbound mail on a store thread of its own (the smtp role of `mailroom serve`). */
    storeThread?: boolean;
    /** SQLite: the write lock of another thread's handle on the same database (the store thread's). */
    writeLock?: SharedArrayBuffer | undefined;
  } = {},
): Promise<Services> {
  // Before the database opens: with PostgreSQL and no key there is nothing to open it for.
  const box = createSecretBox(loadSecretKey(config));
  const database = createDb(config.databaseUrl, { pgPrepare: config.pgPrepare, ...(options.writeLock ? { writeLock: options.writeLock } : {}) });
  const { db, dialect } = database;
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? createLogger('silent');
  try {
    if (options.migrate !== false) await migrateToLatest(db);
    // A process with another key than the one the stored secrets were sealed with refuses to start (exit 78).
    await checkSecretKey(db, box, clock);
  } catch (err) {
    await database.destroy();
    throw err;
  }
  const events = createEventsService({ clock });
  const wakeups = createJobWakeups();
  const commits = createGroupCommit(db);
  // PostgreSQL runs transactions side by side; the two groups share no row (sends insert outbound and
  // job rows, the worker changes existing ones), so they cannot deadlock. SQLite has one writer: one group.
  const workerCommits = dialect.supportsRowLocks ? createGroupCommit(db) : commits;
  const lists = createListService({ db, clock });
  const store = createMessageStore({ clock, dialect });
  const resolve = createDnsResolver(config.dnsServers);
  const authenticator = options.authenticator ?? createMailauthAuthenticator({ resolve: cachingResolver(resolve), hostname: config.smtpHostname });
  // An authenticator given by the caller runs where it was made; otherwise parser threads do the work.
  const analyzer =
    options.authenticator || config.smtpParserThreads === 0
      ? createInProcessAnalyzer(authenticator)
      : createThreadedAnalyzer({ threads: config.smtpParserThreads, dnsServers: config.dnsServers, hostname: config.smtpHostname, fallback: authenticator, logger });
  const storeThread = options.storeThread
    ? createStoreThread({ config, writeLock: database.writeLock, logger, onWake: (queue) => wakeups.notify(queue) })
    : null;
  const domains = createDomainService({ db, clock, events, resolve, hostedDomains: config.hostedDomains, hostedKey: operatorDkimKey(config), hostedSelector: config.dkimSelector, box });
  const queue = createQueue({ db, dialect, clock, leaseMs: config.leaseMs });
  // VERP return paths live in the first hosted domain, whose MX points at this service.
  const returnPaths = createReturnPaths(box, config.hostedDomains[0] ?? config.smtpHostname);
  const sending = createSendingService({ db, clock, events, store, queue, domains, returnPaths, commits });
  const deliverer = options.deliverer ?? createSmtpDeliverer({ heloName: config.smtpHostname });
  const signer = config.dkimThreads === 0 ? createInProcessSigner() : createThreadedSigner({ threads: config.dkimThreads, logger });
  const delivery = createDeliveryHandler({
    db,
    queue,
    dialect,
    commits: workerCommits,
    clock,
    logger,
    events,
    domains,
    routes: options.routes ?? createRouteResolver({ resolve: cachingResolver(resolve), mxPort: config.mxPort, relay: config.smtpRelay, allowCidrs: config.deliveryAllowCidrs }),
    deliverer,
    signer,
    retryBaseMs: config.deliveryRetryBaseMs,
    maxAgeMs: config.deliveryMaxAgeMs,
  });
  const webhooks = createWebhooksModule({
    db,
    dialect,
    clock,
    logger,
    queue,
    events,
    // Uncached: every address check must see the answer the pinned connection will use.
    resolve,
    allowCidrs: config.webhookAllowCidrs,
    sender: createWebhookClient(),
    backoffBaseMs: config.webhookBackoffBaseMs,
    timeoutMs: config.webhookTimeoutMs,
    wake: (name) => wakeups.notify(name),
    box,
  });
  if (options.migrate !== false) await sealPlaintextSecrets({ database, domains, webhooks: webhooks.service, logger });
  return {
    database,
    clock,
    tenancy: createTenancyModule({ db, clock }),
    events,
    queue,
    commits,
    workerCommits,
    sending,
    drafts: createDraftService({ db, clock, sending }),
    serviceTokens: createServiceTokenService({ db, clock }),
    transactional: createTransactionalService({ db, clock, sending }),
    deliverer,
    handlers: [delivery, webhooks.handler],
    webhooks,
    wakeups,
    mailboxes: createMailboxService({ db, clock, domains }),
    domains,
    lists,
    messages: createMessageService({ db, clock, dialect, pages: createPageCache(config.pageCacheBytes) }),
    returnPaths,
    secretBox: box,
    inbound: createInboundService({ db, events, store, lists, analyzer, logger, returnPaths, commits, storeThread: storeThread ?? undefined }),
    analyzer,
    storeThread,
    signer,
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

export function createHttpApp(config: Readonly<Config>, services: Services, logger: Logger): Promise<FastifyInstance> {
  return buildApp({
    logger,
    health: { check: () => ping(services.database.db) },
    auth: services.tenancy.auth,
    mailboxes: services.mailboxes,
    messages: services.messages,
    lists: services.lists,
    domains: services.domains,
    sending: services.sending,
    drafts: services.drafts,
    serviceTokens: services.serviceTokens,
    transactional: services.transactional,
    webhooks: services.webhooks.service,
    rateLimitPerMinute: config.rateLimitPerMinute,
    // One process holds every count in the embedded SQLite mode (decision 210).
    rateLimitCounts: services.database.dialect.sharedByProcesses ? 'database' : 'memory',
    timeouts: { requestMs: config.httpRequestTimeoutMs, headersMs: config.httpHeadersTimeoutMs, keepAliveMs: config.httpKeepAliveTimeoutMs },
  });
}

export interface RunningService {
  /** The HTTP address when the api role runs (port 0 resolves to the picked port). */
  httpUrl: string | null;
  /** The inbound SMTP port when the smtp role runs. */
  smtpPort: number | null;
  /** Graceful stop: close listeners, finish or release leased work, close the database. */
  stop(): Promise<void>;
}

/** Start the given roles in this process. */
export async function startService(config: Readonly<Config>, roles: readonly ProcessRole[], logger: Logger): Promise<RunningService> {
  const services = await createServices(config, { logger, storeThread: roles.includes('smtp') && config.smtpStoreThread });
  const stoppers: Array<() => Promise<void>> = [];
  let httpUrl: string | null = null;
  let smtpPort: number | null = null;
  try {
    if (config.webhookAllowCidrs.length > 0) {
      logger.warn({ cidrs: config.webhookAllowCidrs }, 'MAILROOM_WEBHOOK_ALLOW_CIDRS exempts these networks from the webhook address rules; use only for development and tests');
    }
    if (config.deliveryAllowCidrs.length > 0) {
      logger.warn({ cidrs: config.deliveryAllowCidrs }, 'MAILROOM_DELIVERY_ALLOW_CIDRS exempts these networks from the outbound address rules; use only for development, tests and labs');
    }
    if (config.smtpRelay && relayTlsInsecure(config.smtpRelay)) {
      logger.warn('MAILROOM_SMTP_RELAY has ?tls=insecure: the relay\'s certificate is not verified, so its credentials may reach an impostor; use only in labs');
    }
    if (roles.includes('worker')) {
      const worker: Worker = createWorker(services.handlers, { queue: services.queue, logger, leaseMs: config.leaseMs, commits: services.workerCommits });
      const maintenance: Maintenance = createMaintenance({ db: services.database.db, clock: services.clock, logger });
      const unsubscribe = services.wakeups.subscribe((name) => worker.wake(name));
      worker.start();
      maintenance.start();
      stoppers.push(async () => {
        unsubscribe();
        maintenance.stop();
        await worker.stop();
        services.deliverer.close?.();
        await services.signer.close();
        await services.webhooks.close();
      });
      logger.info('worker role started');
    }
    if (roles.includes('smtp')) {
      // Loaded and connected before the first message, which then does not wait for a thread to start.
      await services.storeThread?.start();
      stoppers.unshift(async () => {
        await services.storeThread?.close();
        await services.analyzer.close();
      });
      const smtp = createInboundSmtpServer({
        inbound: services.inbound,
        logger,
        hostname: config.smtpHostname,
        maxSize: config.smtpMaxSize,
        maxClients: config.smtpMaxClients,
        maxClientsPerIp: config.smtpMaxClientsPerIp,
        tls:
          config.smtpTlsKeyFile && config.smtpTlsCertFile
            ? { key: readFileSync(config.smtpTlsKeyFile), cert: readFileSync(config.smtpTlsCertFile) }
            : undefined,
      });
      smtpPort = await smtp.listen(config.smtpHost, config.smtpPort);
      // Stop taking mail first (open sessions get 421 once the close time-out passes), then let the store thread finish.
      stoppers.unshift(() => smtp.close());
      logger.info({ host: config.smtpHost, port: smtpPort }, 'smtp listening');
    }
    if (roles.includes('api')) {
      const app = await createHttpApp(config, services, logger);
      const address = await app.listen({ host: config.httpHost, port: config.httpPort });
      httpUrl = address;
      stoppers.unshift(() => app.close());
      logger.info({ url: address }, 'http api listening');
    }
  } catch (err) {
    for (const stop of stoppers) await stop().catch(() => undefined);
    await services.database.destroy();
    throw err;
  }
  return {
    httpUrl,
    smtpPort,
    async stop() {
      for (const stop of stoppers) {
        try {
          await stop();
        } catch (err) {
          logger.error({ err }, 'error while stopping');
        }
      }
      await services.database.destroy();
    },
  };
}

import type { FastifyInstance } from 'fastify';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Config } from './config/config.js';
import type { ProcessRole } from './config/roles.js';
import { ping } from './db/database.js';
import { createWorker, type Worker } from './jobs/worker.js';
import { listenOrExplain } from './lib/listen-error.js';
import type { Logger } from './lib/logger.js';
import { relayTlsInsecure } from './modules/sending/routes.resolver.js';
import { asWork } from './db/tables.js';
import { createMaintenance, type Maintenance } from './modules/tenancy/maintenance.js';
import { createTenancyStore } from './modules/tenancy/tenancy.store.js';
import { createServices, type Services } from './services.js';
import { buildApp } from './transports/http/app.js';
import { createInboundSmtpServer } from './transports/smtp/inbound.server.js';

// The role list lives in a module of its own so the CLI can name it without loading the service.
export { ROLES, type ProcessRole } from './config/roles.js';
// The composition lives in services.ts; its callers know it from here.
export { createServices, type FeatureServices, type Plumbing, type Services } from './services.js';

/** The Vite build of web/: dist/web beside the compiled service (dist/main.js), and the same folder from src/main.ts. */
const WEB_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'web');

export function createHttpApp(config: Readonly<Config>, services: Services, logger: Logger): Promise<FastifyInstance> {
  return buildApp({
    logger,
    health: { check: () => ping(services.database.db) },
    auth: services.tenancy.auth,
    workspaceAdmin: services.tenancy.workspace,
    mailboxes: services.mailboxes,
    messages: services.messages,
    lists: services.lists,
    suppressions: services.suppressions,
    domains: services.domains,
    sending: services.sending,
    drafts: services.drafts,
    serviceTokens: services.serviceTokens,
    transactional: services.transactional,
    webhooks: services.webhooks.service,
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
    sandbox: services.sandbox && services.sandboxDns ? { module: services.sandbox, dnsServer: services.sandboxDns.address } : null,
  });
}

export interface RunningService {
  /** The HTTP address when the api role runs (port 0 resolves to the picked port). */
  httpUrl: string | null;
  /** The inbound SMTP port when the smtp role runs. */
  smtpPort: number | null;
  /** Sandbox mode: `ip:port` of this process's sandbox DNS server; null without --sandbox. */
  sandboxDns: string | null;
  /** Graceful stop: close listeners, finish or release leased work, close the database. */
  stop(): Promise<void>;
}

/** Start the given roles in this process. */
export async function startService(config: Readonly<Config>, roles: readonly ProcessRole[], logger: Logger): Promise<RunningService> {
  const services = await createServices(config, { logger });
  const stoppers: Array<() => Promise<void>> = [];
  let httpUrl: string | null = null;
  let smtpPort: number | null = null;
  try {
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
    if (roles.includes('worker')) {
      const worker: Worker = createWorker(services.handlers, { queue: services.queue, logger, leaseMs: config.leaseMs, pollMs: config.workerPollMs, commits: services.workerCommits });
      const maintenance: Maintenance = createMaintenance({ work: asWork(services.database.db), store: createTenancyStore({ dialect: services.database.dialect }), clock: services.clock, logger });
      const unsubscribe = services.wakeups.subscribe((name) => worker.wake(name));
      worker.start();
      maintenance.start();
      services.retention.sweep.start();
      stoppers.push(async () => {
        unsubscribe();
        maintenance.stop();
        await services.retention.sweep.stop();
        await worker.stop();
        services.deliverer.close?.();
        await services.signer.close();
        await services.webhooks.close();
      });
      logger.info('worker role started');
    }
    if (roles.includes('smtp')) {
      stoppers.unshift(() => services.analyzer.close());
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
        tls:
          config.smtpTlsKeyFile && config.smtpTlsCertFile
            ? { key: readFileSync(config.smtpTlsKeyFile), cert: readFileSync(config.smtpTlsCertFile) }
            : undefined,
      });
      const smtpListener = { service: 'SMTP', host: config.smtpHost, port: config.smtpPort, hostVariable: 'MAILROOM_SMTP_HOST', portVariable: 'MAILROOM_SMTP_PORT' };
      smtpPort = await listenOrExplain(smtpListener, () => smtp.listen(config.smtpHost, config.smtpPort));
      // Stop taking mail first (open sessions get 421 once the close time-out passes), then stop the analysis threads.
      stoppers.unshift(() => smtp.close());
      logger.info({ host: config.smtpHost, port: smtpPort }, 'smtp listening');
    }
    if (roles.includes('api')) {
      const app = await createHttpApp(config, services, logger);
      const httpListener = { service: 'HTTP API', host: config.httpHost, port: config.httpPort, hostVariable: 'MAILROOM_HTTP_HOST', portVariable: 'MAILROOM_HTTP_PORT' };
      const address = await listenOrExplain(httpListener, () => app.listen({ host: config.httpHost, port: config.httpPort }));
      httpUrl = address;
      // Close the app first (answers under way finish), then the threads its sends compose on.
      stoppers.unshift(() => services.composer.close());
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
    sandboxDns: services.sandboxDns?.address ?? null,
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

import swagger from '@fastify/swagger';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyRequest, type onResponseHookHandler } from 'fastify';
import type { Logger } from '../../lib/logger.js';
import type { Metrics } from '../../lib/metrics.js';
import { newId } from '../../lib/ids.js';
import type { AuditLog } from '../../modules/audit/audit.service.js';
import type { ReportService } from '../../modules/reports/report.service.js';
import type { DomainService } from '../../modules/domains/domain.service.js';
import type { ListService } from '../../modules/lists/list.service.js';
import type { SuppressionService } from '../../modules/suppressions/suppression.service.js';
import type { UnsubscribeService } from '../../modules/suppressions/unsubscribe.service.js';
import type { EventStreamService } from '../../modules/events/event-stream.service.js';
import type { DraftService } from '../../modules/sending/draft.service.js';
import type { SendingService } from '../../modules/sending/sending.service.js';
import type { MailboxService } from '../../modules/mailboxes/mailbox.service.js';
import type { MessageService } from '../../modules/messages/message.service.js';
import type { AuthService } from '../../modules/tenancy/auth.service.js';
import type { WorkspaceAdminService } from '../../modules/tenancy/workspace-admin.service.js';
import type { AppPasswordService } from '../../modules/app-passwords/app-password.service.js';
import type { ServiceTokenService } from '../../modules/transactional/service-token.service.js';
import type { TransactionalService } from '../../modules/transactional/transactional.service.js';
import { apiKeyAuth, serviceTokenAuth, sessionAuth, sessionOf, tenantOf } from './plugins/auth.js';
import type { WebhookService } from '../../modules/webhooks/webhook.service.js';
import { answerClientError, answerFrameworkError, registerErrorHandling } from './plugins/errors.js';
import { registerRequestLimits } from './plugins/rate-limit.js';
import { memoryCounter, workspaceRequestQuota } from './plugins/workspace-quota.js';
import type { QuotaService } from '../../modules/quotas/quota.service.js';
import type { Clock } from '../../lib/clock.js';
import { usageRoutes } from './routes/usage.routes.js';
import { createAdmission, type AdmissionLimits } from './plugins/admission.js';
import { registerJsonBodies } from './plugins/json-body.js';
import { createValidatorCompiler } from './plugins/validation.js';
import { healthRoutes, type HealthCheck } from './routes/health.routes.js';
import { acmeChallengeRoutes, type AcmeChallenges } from './routes/acme-challenge.routes.js';
import { eventRoutes } from './routes/events.routes.js';
import { auditRoutes } from './routes/audit.routes.js';
import { domainRoutes } from './routes/domains.routes.js';
import { domainReportRoutes } from './routes/domain-reports.routes.js';
import { composeAidRoutes } from './routes/compose-aids.routes.js';
import { draftRoutes } from './routes/drafts.routes.js';
import { listRoutes } from './routes/lists.routes.js';
import { suppressionRoutes } from './routes/suppressions.routes.js';
import { unsubscribeRoutes } from './routes/unsubscribe.routes.js';
import { mailboxRoutes } from './routes/mailboxes.routes.js';
import { messageRoutes } from './routes/messages.routes.js';
import { bulkRoutes } from './routes/bulk.routes.js';
import { labelRoutes } from './routes/labels.routes.js';
import type { LabelService } from '../../modules/messages/label.service.js';
import type { BulkService } from '../../modules/messages/bulk.service.js';
import { sendingRoutes } from './routes/sending.routes.js';
import { serviceTokenRoutes } from './routes/service-tokens.routes.js';
import { appPasswordRoutes } from './routes/app-passwords.routes.js';
import { transactionalRoutes } from './routes/transactional.routes.js';
import { loginRoute, sessionRoutes } from './routes/session.routes.js';
import { webhookRoutes } from './routes/webhooks.routes.js';
import { retentionRoutes } from './routes/retention.routes.js';
import type { RetentionService } from '../../modules/retention/retention.service.js';
import { SANDBOX_HEADER, sandboxAdminRoutes, sandboxOutboxRoutes } from './routes/sandbox.routes.js';
import type { SandboxModule } from '../../modules/sandbox/sandbox.module.js';
import { apiKeyRoutes, memberRoutes } from './routes/workspace-admin.routes.js';
import { documentSecurity, openApiOptions } from './openapi.js';
import { SHARED_SCHEMAS } from './schemas.js';
import { createPageCache } from './page-cache.js';
import { registerWebApp } from './web.js';

/** A JSON body over 1 MiB answers 413. */
export const BODY_LIMIT_BYTES = 1024 * 1024;
/**
 * Node checks its request and header time-outs every so often (30 s by default), so a client could
 * outstay them by that much; at most this long here.
 */
const TIMEOUT_CHECK_INTERVAL_MS = 1000;

export interface AppDeps {
  logger: Logger;
  health: HealthCheck;
  auth: AuthService;
  /** API keys and members of the active workspace (session surface). */
  workspaceAdmin: WorkspaceAdminService;
  mailboxes: MailboxService;
  messages: MessageService;
  bulk: BulkService;
  /** The workspace's labels: colours and counts (labels.routes.ts). */
  labels: LabelService;
  lists: ListService;
  suppressions: SuppressionService;
  /** The one-click unsubscribe links (`/u/:token`): no credential. */
  unsubscribes: UnsubscribeService;
  domains: DomainService;
  /** DMARC and TLS report figures per sending domain (GET /app/api/sending-domains/{id}/reports). */
  reports: ReportService;
  sending: SendingService;
  drafts: DraftService;
  serviceTokens: ServiceTokenService;
  /** Mail clients' app passwords (session surface). */
  appPasswords: AppPasswordService;
  transactional: TransactionalService;
  webhooks: WebhookService;
  /** The audit log's reading (GET /app/api/audit-log). */
  audit: Pick<AuditLog, 'list'>;
  /** The event stream (GET /app/api/events/stream). */
  events: EventStreamService;
  /** The workspace's retention periods (GET/PATCH /app/api/retention). */
  retention: RetentionService;
  /** Bytes of answered message pages this process keeps (page-cache.ts); 0 keeps none. */
  pageCacheBytes: number;
  /** Requests under way and large bodies in memory, per workspace and in all (plugins/admission.ts). */
  admission: AdmissionLimits;
  /** Threads that parse large JSON bodies (plugins/json-body.ts); 0 parses them on the main thread. */
  bodyThreads: number;
  /** Requests per minute per credential (0 = no limit). */
  rateLimitPerMinute: number;
  /** Where the rate limit counts: in the shared database, or in this process (when it is the only one). */
  rateLimitCounts: 'database' | 'memory';
  /** The built web app (index.html and assets/), or null to serve none; a folder without a build serves a how-to page. */
  webRoot: string | null;
  /** Slow clients: whole request, headers alone, idle keep-alive connection (milliseconds). */
  timeouts: { requestMs: number; headersMs: number; keepAliveMs: number };
  /** ACME HTTP-01 answers (modules/certificates); null or absent = ACME off, every token a 404. */
  acmeChallenges?: AcmeChallenges | null;
  /** Sandbox mode (--sandbox): its routes, and a header on every answer; null = no such routes (404) and no header. */
  sandbox: { module: SandboxModule; dnsServer: string } | null;
  /** Quotas per workspace: usage routes and the `api_requests_per_minute` quota. */
  quotas: Pick<QuotaService, 'usageOf' | 'limitsOf'>;
  /** The service's clock: the windows of the per-workspace request quota when counted in this process. */
  clock: Pick<Clock, 'now'>;
  /** Counts each answer by route pattern, method and status, with its time (no hook at all when disabled). */
  metrics?: Pick<Metrics, 'enabled' | 'httpRequest'>;
}

/**
 * Count every answer by its route's pattern (never the URL): each route gets a hook that knows its pattern, so an
 * answer costs a lookup and an increment, nothing read from the request but its method; requests that match no route
 * count as `unmatched`. Added before any route.
 */
function countAnswers(app: FastifyInstance, metrics: Pick<Metrics, 'httpRequest'>): void {
  app.addHook('onRoute', (route) => {
    const pattern = route.url;
    const record: onResponseHookHandler = (request, reply, done) => {
      metrics.httpRequest(pattern, request.method, reply.statusCode, reply.elapsedTime / 1000);
      done();
    };
    const given = route.onResponse;
    route.onResponse = given === undefined ? [record] : [...(Array.isArray(given) ? given : [given]), record];
  });
  app.addHook('onResponse', (request, reply, done) => {
    if (request.is404) metrics.httpRequest('unmatched', request.method, reply.statusCode, reply.elapsedTime / 1000);
    done();
  });
}

/**
 * Build the HTTP application (not listening): the API-key surface at the root, the session surface
 * under /app/api, /health and /openapi.json, and the web app at / (web.ts). Routes are thin: schema, one service call, a mapped result.
 */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const app = Fastify({
    // pino's Logger is a FastifyBaseLogger; the cast keeps the instance's default logger type.
    // The cast keeps FastifyInstance's default logger type, which every route module is typed against.
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion
    loggerInstance: deps.logger as FastifyBaseLogger,
    bodyLimit: BODY_LIMIT_BYTES,
    // Path parameters carry addresses (254) and list entries (320): above Fastify's default of 100.
    routerOptions: { maxParamLength: 512 },
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.-]{1,64}$/.test(given) ? given : newId('evt').replace('evt_', 'req_');
    },
    // A request arriving while the server closes gets 503 from plugins/errors.ts, in the usual body.
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    requestTimeout: deps.timeouts.requestMs,
    keepAliveTimeout: deps.timeouts.keepAliveMs,
    http: {
      headersTimeout: deps.timeouts.headersMs,
      connectionsCheckingInterval: Math.min(TIMEOUT_CHECK_INTERVAL_MS, deps.timeouts.headersMs),
    },
    // Errors before a route answers (431, malformed requests, time-outs, bad URLs) in the usual {error, detail} body.
    clientErrorHandler: answerClientError,
    frameworkErrors: answerFrameworkError,
  });
  if (deps.metrics?.enabled) countAnswers(app, deps.metrics);
  app.decorateRequest('tenantContext', null);
  app.decorateRequest('sessionContext', null);
  app.decorateRequest('serviceTokenContext', null);
  const sandbox = deps.sandbox;
  app.addHook('onSend', async (request, reply) => {
    void reply.header('x-request-id', request.id);
    // Loud on purpose: no client can mistake a sandbox for a service that delivers mail.
    if (sandbox) void reply.header(SANDBOX_HEADER, 'true');
  });

  // Only JSON bodies: without a text/plain parser such a body answers 415.
  app.removeContentTypeParser('text/plain');
  registerJsonBodies(app, { threads: deps.bodyThreads, logger: deps.logger });
  app.setValidatorCompiler(createValidatorCompiler(SHARED_SCHEMAS));
  for (const schema of SHARED_SCHEMAS) app.addSchema(schema);

  await app.register(swagger, openApiOptions('0.1.0'));

  const limits = await registerRequestLimits(app, {
    perMinute: deps.rateLimitPerMinute,
    count: deps.rateLimitCounts === 'database' ? (bucket, windowMs) => deps.auth.countRequest(bucket, windowMs) : undefined,
  });
  // Each workspace's API requests per minute, counted where the per-credential limit counts (the database or here).
  const requestQuota = workspaceRequestQuota({
    limitOf: async (workspaceId) => (await deps.quotas.limitsOf(workspaceId)).api_requests_per_minute,
    count: deps.rateLimitCounts === 'database' ? (bucket, windowMs) => deps.auth.countRequest(bucket, windowMs) : memoryCounter(() => deps.clock.now()),
  });
  // The app's pages answer requests that match no route, so every API route keeps its own answer.
  const page = await registerWebApp(app, deps.webRoot);
  registerErrorHandling(app, limits.address, page);
  // One cache for both surfaces' pages (their keys name the route).
  const pages = createPageCache(deps.pageCacheBytes);

  app.get('/openapi.json', { schema: { hide: true }, config: { rateLimit: false } }, async () => app.swagger());
  await app.register(async (open) => {
    documentSecurity(open, []);
    await open.register(healthRoutes(deps.health));
    await open.register(acmeChallengeRoutes(deps.acmeChallenges ?? null));
    // No rate limit by address: mail providers post many recipients' unsubscribes from few addresses, and a
    // 64-bit keyed tag is not worth guessing.
    await open.register(unsubscribeRoutes({ unsubscribes: deps.unsubscribes }));
  });

  // Credentials are checked, and requests counted against the rate limit (plugins/rate-limit.ts), in
  // preParsing: before the body is read, so a caller without a credential learns nothing about body
  // rules (401 before 413/415/400) and a limited caller costs no body parsing. The admission hook after
  // it then knows the workspace: its share of requests under way and of memory for large bodies.
  const admit = createAdmission(deps.admission);
  // API-key surface.
  await app.register(async (scope) => {
    scope.addHook('preParsing', apiKeyAuth(deps.auth, limits.credential));
    scope.addHook('preParsing', requestQuota);
    scope.addHook('preParsing', admit);
    documentSecurity(scope, [{ apiKey: [] }]);
    await scope.register(usageRoutes({ quotas: deps.quotas, tenant: tenantOf, surface: 'api-key' }));
    await scope.register(mailboxRoutes({ mailboxes: deps.mailboxes, tenant: tenantOf, surface: 'api-key', withItemRoutes: true }));
    await scope.register(messageRoutes({ messages: deps.messages, tenant: tenantOf, surface: 'api-key', pages }));
    await scope.register(bulkRoutes({ bulk: deps.bulk, tenant: tenantOf, surface: 'api-key' }));
    await scope.register(labelRoutes({ labels: deps.labels, tenant: tenantOf, surface: 'api-key' }));
    await scope.register(sendingRoutes({ sending: deps.sending, tenant: tenantOf, surface: 'api-key' }));
    if (sandbox) await scope.register(sandboxOutboxRoutes({ sandbox: sandbox.module, dnsServer: sandbox.dnsServer, tenant: tenantOf, surface: 'api-key' }));
  });

  // Session surface.
  await app.register(
    async (scope) => {
      await scope.register(async (anonymous) => {
        anonymous.addHook('onRequest', limits.address);
        documentSecurity(anonymous, []);
        await anonymous.register(loginRoute(deps.auth));
      });
      await scope.register(async (authed) => {
        authed.addHook('preParsing', sessionAuth(deps.auth, limits.credential));
        authed.addHook('preParsing', requestQuota);
        authed.addHook('preParsing', admit);
        documentSecurity(authed, [{ session: [] }]);
        await authed.register(sessionRoutes(deps.auth));
        const tenant = (request: FastifyRequest) => deps.auth.sessionTenant(sessionOf(request));
        await authed.register(mailboxRoutes({ mailboxes: deps.mailboxes, tenant, surface: 'session', withItemRoutes: false }));
        await authed.register(messageRoutes({ messages: deps.messages, tenant, surface: 'session', pages }));
        await authed.register(bulkRoutes({ bulk: deps.bulk, tenant, surface: 'session' }));
        await authed.register(labelRoutes({ labels: deps.labels, tenant, surface: 'session' }));
        await authed.register(listRoutes({ lists: deps.lists, tenant }));
        await authed.register(suppressionRoutes({ suppressions: deps.suppressions, tenant }));
        await authed.register(domainRoutes({ domains: deps.domains, tenant }));
        await authed.register(domainReportRoutes({ reports: deps.reports, tenant }));
        await authed.register(sendingRoutes({ sending: deps.sending, tenant, surface: 'session' }));
        await authed.register(draftRoutes({ drafts: deps.drafts, tenant }));
        await authed.register(composeAidRoutes({ aids: deps.mailboxes, tenant }));
        await authed.register(serviceTokenRoutes({ tokens: deps.serviceTokens, tenant }));
        await authed.register(apiKeyRoutes({ workspace: deps.workspaceAdmin, tenant }));
        await authed.register(appPasswordRoutes({ appPasswords: deps.appPasswords, tenant }));
        await authed.register(memberRoutes({ workspace: deps.workspaceAdmin, tenant }));
        await authed.register(webhookRoutes({ webhooks: deps.webhooks, tenant }));
        await authed.register(usageRoutes({ quotas: deps.quotas, tenant, surface: 'session' }));
        await authed.register(auditRoutes({ audit: deps.audit, tenant }));
        await authed.register(retentionRoutes({ retention: deps.retention, tenant }));
        const grant = (request: FastifyRequest) => {
          const { workspaceId, role } = tenant(request);
          const { sessionId, userId } = sessionOf(request);
          return { sessionId, userId, workspaceId, role };
        };
        await authed.register(eventRoutes({ events: deps.events, grant }));
        if (sandbox) {
          await authed.register(sandboxOutboxRoutes({ sandbox: sandbox.module, dnsServer: sandbox.dnsServer, tenant, surface: 'session' }));
          await authed.register(sandboxAdminRoutes({ sandbox: sandbox.module, tenant }));
        }
      });
    },
    { prefix: '/app/api' },
  );

  // Transactional surface: service tokens only (and they reach nothing else).
  await app.register(
    async (scope) => {
      scope.addHook('preParsing', serviceTokenAuth(deps.serviceTokens, limits.credential));
      scope.addHook('preParsing', requestQuota);
      scope.addHook('preParsing', admit);
      documentSecurity(scope, [{ serviceToken: [] }]);
      await scope.register(transactionalRoutes({ transactional: deps.transactional }));
    },
    { prefix: '/v1/transactional' },
  );

  return app;
}

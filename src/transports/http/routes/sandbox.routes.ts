import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { MAX_TXT_LENGTH, RECORD_TYPES } from '../../../modules/sandbox/dns-records.js';
import { MAX_RECORDS_PER_PUBLISH } from '../../../modules/sandbox/sandbox-dns.service.js';
import type { SandboxModule } from '../../../modules/sandbox/sandbox.module.js';
import type { TenantContext } from '../../../modules/tenancy/tenancy.types.js';
import { Email, Limit, Offset, ResourceId, answer, documentedEnum, errors, operationId, type Surface } from '../schemas.js';
import { sendDownload } from './download.js';

/** Every answer of a sandbox says so in this header (decision 262). */
export const SANDBOX_HEADER = 'mailroom-sandbox';

const NoQuery = Type.Object({}, { additionalProperties: false });
const DnsName = Type.String({ minLength: 1, maxLength: 254, description: 'a DNS name, such as _mailroom-verification.acme.example' });
// The sandbox DNS service refuses another type with its own error code.
const DnsType = documentedEnum(RECORD_TYPES, Type.String({ minLength: 1, maxLength: 10, description: RECORD_TYPES.join(', ') }));
const RecordInput = Type.Object(
  { name: DnsName, type: DnsType, value: Type.String({ minLength: 1, maxLength: MAX_TXT_LENGTH + 2, description: 'A: an IPv4 address; AAAA: IPv6; CNAME: a name; MX: "10 mx.example.com"; TXT: the text' }) },
  { additionalProperties: false },
);
const PublishBody = Type.Object(
  { records: Type.Array(RecordInput, { minItems: 1, maxItems: MAX_RECORDS_PER_PUBLISH, description: 'each name and type given replaces the records of that name and type' }) },
  { additionalProperties: false, title: 'SandboxDnsPublish' },
);
const DnsRecord = Type.Object({ name: Type.String(), type: documentedEnum(RECORD_TYPES, Type.String()), value: Type.String(), created_at: Type.String({ format: 'date-time' }) }, { title: 'SandboxDnsRecord' });
const DnsRecords = Type.Object({ dns_records: Type.Array(DnsRecord) }, { title: 'SandboxDnsRecords' });
const NameParams = Type.Object({ name: DnsName }, { additionalProperties: false });
const TypeQuery = Type.Object({ type: Type.Optional(DnsType) }, { additionalProperties: false });
const Deleted = Type.Object({ ok: Type.Literal(true), deleted: Type.Integer() }, { title: 'SandboxDeleted' });

const capturedProperties = {
  capture_id: Type.String(),
  message_id: Type.String({ description: 'the outbound message (msg_…) this transaction carried' }),
  mail_from: Type.String(),
  recipients: Type.Array(Type.String(), { description: 'the envelope recipients of this transaction' }),
  stored: Type.Array(Type.Object({ address: Type.String(), mailbox: Type.String(), message_id: Type.String() }), {
    description: "recipients that are this service's mailboxes (or a catch-all's), and the copy stored there",
  }),
  subject: Type.String(),
  size: Type.Integer(),
  captured_at: Type.String({ format: 'date-time' }),
};
const Captured = Type.Object(capturedProperties, { title: 'CapturedMessage' });
const CapturedDetail = Type.Object({ ...capturedProperties, raw: Type.String({ description: 'the full MIME message as it left, DKIM signature included' }) }, { title: 'CapturedMessageDetail' });
const CapturedPage = Type.Object({ captured_messages: Type.Array(Captured), total: Type.Integer(), limit: Type.Integer(), offset: Type.Integer() }, { title: 'CapturedMessagePage' });
const PageQuery = Type.Object({ limit: Type.Optional(Limit), offset: Type.Optional(Offset) }, { additionalProperties: false });
const CaptureParams = Type.Object({ capture_id: ResourceId }, { additionalProperties: false });
const RawMessage = { description: 'the message as it left (message/rfc822)', content: { 'message/rfc822': { schema: { type: 'string', format: 'binary' } } } };

const CatchAll = Type.Object({ domain: Type.String(), mailbox: Type.String(), created_at: Type.String({ format: 'date-time' }) }, { title: 'CatchAll' });
const CatchAllBody = Type.Object({ mailbox: Email }, { additionalProperties: false });
const DomainParams = Type.Object({ domain: DnsName }, { additionalProperties: false });
const Status = Type.Object({ sandbox: Type.Literal(true), dns_server: Type.String({ description: 'ip:port of the sandbox DNS server this process runs (UDP and TCP)' }) }, { title: 'SandboxStatus' });

interface SandboxRouteDeps {
  sandbox: SandboxModule;
  /** ip:port of this process's sandbox DNS server. */
  dnsServer: string;
  tenant: (request: FastifyRequest) => TenantContext;
  surface: Surface;
}

/** The captured mail of the workspace (both surfaces) and the sandbox's own address. */
export function sandboxOutboxRoutes({ sandbox, dnsServer, tenant, surface }: SandboxRouteDeps): FastifyPluginAsyncTypebox {
  const tags = ['sandbox'];
  const security: Array<Record<string, string[]>> = [{ [surface === 'session' ? 'session' : 'apiKey']: [] }];
  const common = errors(400, 401, 403, 404, 429);
  return async (app) => {
    app.get(
      '/sandbox',
      { schema: { operationId: operationId(surface, 'getSandbox'), summary: 'Sandbox mode: whether it is on (this route exists only then) and its DNS server', tags, security, querystring: NoQuery, response: { 200: answer('Sandbox mode is on; its DNS server', Status), ...errors(401, 403, 429) } } },
      async () => ({ sandbox: true as const, dns_server: dnsServer }),
    );
    app.get(
      '/sandbox/outbox',
      { schema: { operationId: operationId(surface, 'listSandboxOutbox'), summary: 'Outbound mail the sandbox captured instead of delivering, newest first', tags, security, querystring: PageQuery, response: { 200: answer('A page of captured messages, newest first', CapturedPage), ...common } } },
      async (request) => sandbox.outbox.list(tenant(request), { limit: request.query.limit ?? 50, offset: request.query.offset ?? 0 }),
    );
    app.get(
      '/sandbox/outbox/:capture_id',
      { schema: { operationId: operationId(surface, 'getSandboxCapturedMessage'), summary: 'One captured message with its full MIME source', tags, security, params: CaptureParams, querystring: NoQuery, response: { 200: answer('The captured message with its MIME source', CapturedDetail), ...common } } },
      async (request) => sandbox.outbox.get(tenant(request), request.params.capture_id),
    );
    app.get(
      '/sandbox/outbox/:capture_id/raw',
      { schema: { operationId: operationId(surface, 'downloadSandboxCapturedMessage'), summary: 'Download a captured message (message/rfc822)', tags, security, params: CaptureParams, querystring: NoQuery, response: { 200: RawMessage, ...common } } },
      async (request, reply) => sendDownload(reply, await sandbox.outbox.raw(tenant(request), request.params.capture_id)),
    );
    app.delete(
      '/sandbox/outbox',
      { schema: { operationId: operationId(surface, 'clearSandboxOutbox'), summary: "Delete the workspace's captured messages", tags, security, querystring: NoQuery, response: { 200: answer('How many captured messages were deleted', Deleted), ...common } } },
      async (request) => sandbox.outbox.clear(tenant(request)),
    );
  };
}

/** Records of the sandbox's DNS server and catch-all mailboxes (session surface, owner or admin). */
export function sandboxAdminRoutes({ sandbox, tenant }: Omit<SandboxRouteDeps, 'surface' | 'dnsServer'>): FastifyPluginAsyncTypebox {
  const tags = ['sandbox'];
  const security = [{ session: [] }];
  const common = errors(400, 401, 403, 404, 429);
  const withBody = errors(400, 401, 403, 404, 409, 413, 415, 429);
  return async (app) => {
    app.get(
      '/sandbox/dns-records',
      { schema: { operationId: 'appListSandboxDnsRecords', summary: 'DNS records the workspace published to the sandbox', tags, security, querystring: NoQuery, response: { 200: answer('The records, by name and type', DnsRecords), ...common } } },
      async (request) => sandbox.dns.list(tenant(request)),
    );
    app.post(
      '/sandbox/dns-records',
      { schema: { operationId: 'appPublishSandboxDnsRecords', summary: 'Publish DNS records to the sandbox (each name and type given is replaced)', tags, security, querystring: NoQuery, body: PublishBody, response: { 200: answer('The records published', DnsRecords), ...withBody } } },
      async (request) => sandbox.dns.publish(tenant(request), request.body),
    );
    app.delete(
      '/sandbox/dns-records/:name',
      { schema: { operationId: 'appDeleteSandboxDnsRecords', summary: "Delete the workspace's records of a name (of one type with ?type=)", tags, security, params: NameParams, querystring: TypeQuery, response: { 200: answer('How many records were deleted', Deleted), ...common } } },
      async (request) => sandbox.dns.remove(tenant(request), request.params.name, request.query.type),
    );
    app.get(
      '/sandbox/catch-alls',
      { schema: { operationId: 'appListSandboxCatchAlls', summary: 'Catch-all mailboxes of the workspace', tags, security, querystring: NoQuery, response: { 200: answer('The catch-all mailboxes', Type.Object({ catch_alls: Type.Array(CatchAll) }, { title: 'CatchAllList' })), ...common } } },
      async (request) => sandbox.catchAlls.list(tenant(request)),
    );
    app.post(
      '/sandbox/catch-alls',
      { schema: { operationId: 'appSetSandboxCatchAll', summary: "Send mail for unknown addresses of the mailbox's domain to the mailbox", tags, security, querystring: NoQuery, body: CatchAllBody, response: { 200: answer('The catch-all, changed to this mailbox', CatchAll), 201: answer('The catch-all, new', CatchAll), ...withBody } } },
      async (request, reply) => {
        const { catchAll, created } = await sandbox.catchAlls.set(tenant(request), request.body);
        return reply.code(created ? 201 : 200).send(catchAll);
      },
    );
    app.delete(
      '/sandbox/catch-alls/:domain',
      { schema: { operationId: 'appDeleteSandboxCatchAll', summary: 'Turn the catch-all of a domain off', tags, security, params: DomainParams, querystring: NoQuery, response: { 200: answer('The catch-all is off', Type.Object({ ok: Type.Literal(true) })), ...common } } },
      async (request) => sandbox.catchAlls.remove(tenant(request), request.params.domain),
    );
  };
}

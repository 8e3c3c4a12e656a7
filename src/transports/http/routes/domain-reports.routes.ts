import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { ReportService } from '../../../modules/reports/report.service.js';
import type { TenantContext } from '../../../modules/tenancy/tenancy.types.js';
import { ResourceId, answer, errors } from '../schemas.js';

const Params = Type.Object({ domain_id: ResourceId }, { additionalProperties: false });
const Period = Type.Object(
  {
    from: Type.Optional(Type.String({ minLength: 1, maxLength: 40, description: 'ISO 8601 date or date-time, inclusive (default: 30 days before `to`)' })),
    to: Type.Optional(Type.String({ minLength: 1, maxLength: 40, description: 'ISO 8601 date or date-time, exclusive (default: now)' })),
  },
  { additionalProperties: false },
);
const PassFail = Type.Object({ pass: Type.Integer(), fail: Type.Integer() });
const DmarcSource = Type.Object(
  {
    source_ip: Type.String(),
    reports: Type.Integer({ description: 'reports that name this source' }),
    messages: Type.Integer(),
    dkim: PassFail,
    spf: PassFail,
    aligned: Type.Object({ dkim_pass: Type.Integer(), spf_pass: Type.Integer() }, { description: 'the policy evaluation: messages whose DKIM or SPF passed aligned' }),
    dmarc: PassFail,
    disposition: Type.Object({ none: Type.Integer(), quarantine: Type.Integer(), reject: Type.Integer() }),
  },
  { title: 'DmarcSourceFigures' },
);
const TlsPolicy = Type.Object(
  {
    policy_type: Type.String({ description: 'sts, tlsa or no-policy-found' }),
    reports: Type.Integer(),
    successful: Type.Integer(),
    failed: Type.Integer(),
    failure_types: Type.Array(Type.Object({ result_type: Type.String(), count: Type.Integer() })),
  },
  { title: 'TlsPolicyFigures' },
);
const Figures = Type.Object(
  { domain_id: Type.String(), domain: Type.String(), from: Type.String(), to: Type.String(), dmarc: Type.Array(DmarcSource), tls: Type.Array(TlsPolicy) },
  { title: 'DomainReportFigures' },
);

/** A sending domain's DMARC and TLS report figures on the session surface (owner or admin, as the domain routes). */
export function domainReportRoutes({ reports, tenant }: { reports: ReportService; tenant: (request: FastifyRequest) => TenantContext }): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/sending-domains/:domain_id/reports',
      {
        schema: {
          operationId: 'appGetSendingDomainReports',
          summary: 'Figures of the DMARC aggregate and TLS reports received about the domain, summed per source IP and per policy type',
          tags: ['sending domains'],
          security: [{ session: [] }],
          params: Params,
          querystring: Period,
          response: { 200: answer('The domain’s report figures over the period', Figures), ...errors(400, 401, 403, 404, 429) },
        },
      },
      async (request) => reports.figures(tenant(request), request.params.domain_id, request.query),
    );
  };
}

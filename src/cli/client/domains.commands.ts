import type { Command } from 'commander';
import type { Schema } from './api.types.js';
import { group, leaf, run, type Context } from './context.js';
import { CliError } from './errors.js';
import { relativeTime, renderFields, renderTable, safeLine } from './format.js';
import type { ApiClient } from './http-client.js';

type DnsRecord = Schema<'DnsRecord'>;
import { statusStyle } from './views.js';

/** A sending domain named by its id (`dom_…`) or by its name, as the workspace has it. */
export async function domainId(api: ApiClient, value: string): Promise<string> {
  if (value.startsWith('dom_')) return value;
  const name = value.trim().toLowerCase().replace(/\.$/, '');
  const { sending_domains } = await api.get('/app/api/sending-domains');
  const found = sending_domains.find((d) => d.domain === name);
  if (!found) throw new CliError(`${name} is not a sending domain of this workspace (mailroom domains lists them)`);
  return found.domain_id;
}

/** DNS records as blocks a person can copy from: the value on a line of its own, never cut. */
function recordLines(records: readonly (readonly [string, DnsRecord])[], ctx: Context): string[] {
  return records.flatMap(([what, r], i) => [
    ...(i > 0 ? [''] : []),
    `  ${ctx.style.bold(what)}`,
    `    name   ${safeLine(r.record_name)}`,
    `    type   ${safeLine(r.record_type)}`,
    `    value  ${safeLine(r.record_value)}`,
  ]);
}

function domainFields(d: Schema<'SendingDomain'>, ctx: Context): string[] {
  return renderFields(
    [
      ['Domain', d.domain],
      ['ID', d.domain_id],
      ['Status', statusStyle(ctx.style)(d.status)],
      ['Created', relativeTime(d.created_at)],
      ['Verified', d.verified_at ? relativeTime(d.verified_at) : null],
    ],
    ctx.style,
  );
}

export function registerDomainCommands(program: Command): void {
  const domains = group(program, 'domains', 'sending domains: mailboxes and DKIM-signed mail at your own domain (owner or admin)', [
    'mailroom domains create acme.example',
    'mailroom domains verify acme.example',
  ]).alias('sending-domains');

  leaf(domains, { name: 'list', isDefault: true, description: 'the sending domains of the workspace', examples: ['mailroom domains list'] }).action(
    run(async (ctx) => {
      const answer = await ctx.api().get('/app/api/sending-domains');
      ctx.show(answer, () =>
        answer.sending_domains.length === 0
          ? ['no sending domains yet: mailroom domains create <domain>']
          : renderTable(
              answer.sending_domains,
              [
                { header: 'ID', value: (d) => d.domain_id },
                { header: 'DOMAIN', value: (d) => d.domain },
                { header: 'STATUS', value: (d) => d.status, style: statusStyle(ctx.style) },
                { header: 'DKIM SELECTOR', value: (d) => d.dkim.selector },
                { header: 'CREATED', value: (d) => relativeTime(d.created_at), style: (t) => ctx.style.dim(t) },
              ],
              ctx.style,
            ),
      );
    }),
  );

  leaf(domains, {
    name: 'create <domain>',
    description: 'add a sending domain and show the DNS records to publish (the verification record is shown only now)',
    examples: ['mailroom domains create acme.example'],
  }).action(
    run(async (ctx, [name = '']) => {
      const created = await ctx.api().post('/app/api/sending-domains', { body: { domain: name } });
      const records: (readonly [string, DnsRecord])[] = [
        ['Verification (shown only now: keep it until it is published)', created.verification],
        ['DKIM', created.dkim],
      ];
      ctx.show(created, () => [
        `added ${created.domain} (${created.domain_id}), ${created.status}`,
        '',
        'Publish these TXT records in its DNS:',
        '',
        ...recordLines(records, ctx),
        '',
        `Then run: mailroom domains verify ${created.domain_id}`,
      ]);
    }),
  );

  leaf(domains, { name: 'show <domain>', description: 'one sending domain (by id or name) with its DKIM record', examples: ['mailroom domains show acme.example'] }).action(
    run(async (ctx, [value = '']) => {
      const api = ctx.api();
      const domain = await api.get('/app/api/sending-domains/{domain_id}', { path: { domain_id: await domainId(api, value) } });
      ctx.show(domain, () => [...domainFields(domain, ctx), '', ...recordLines([['DKIM', domain.dkim]], ctx)]);
    }),
  );

  leaf(domains, {
    name: 'verify <domain>',
    description: 'look the verification TXT record up now; the domain becomes verified when it matches',
    examples: ['mailroom domains verify dom_01m7yjdhcxqgt7jvmq1fx1c9wn', `until mailroom domains verify acme.example --json | grep -q '"status":"verified"'; do sleep 60; done`],
  }).action(
    run(async (ctx, [value = '']) => {
      const api = ctx.api();
      const domain = await api.post('/app/api/sending-domains/{domain_id}/verify', { path: { domain_id: await domainId(api, value) } });
      ctx.show(domain, () =>
        domain.status === 'verified'
          ? [`${domain.domain} is verified: create mailboxes in it and send from them`]
          : [`${domain.domain} is still pending: _mailroom-verification.${domain.domain} has no matching TXT record yet (DNS can take a while)`],
      );
    }),
  );
}

import type { Command } from 'commander';
import type { Schema } from './api.types.js';
import { group, leaf, run, type Context } from './context.js';
import { CliError } from './errors.js';
import { relativeTime, renderFields, renderTable, safeLine } from './format.js';
import type { ApiClient } from './http-client.js';
import { statusStyle } from './views.js';

type DnsRecord = Schema<'DnsRecord'>;
type SendingDomain = Schema<'SendingDomain'>;
type CheckedDomain = Schema<'CheckedSendingDomain'>;
type RecordCheck = Schema<'RecordCheck'>;

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
function recordLines(records: readonly (readonly [string, DnsRecord | Schema<'ReturnPathRecord'>])[], ctx: Context): string[] {
  return records.flatMap(([what, r], i) => [
    ...(i > 0 ? [''] : []),
    `  ${ctx.style.bold(what)}`,
    `    name   ${safeLine(r.record_name)}`,
    `    type   ${safeLine(r.record_type)}`,
    `    value  ${safeLine(r.record_value)}`,
  ]);
}

/** The records a domain publishes beside its verification record: DKIM, the SPF advice, and its return-path host's. */
const signingRecords = (d: SendingDomain): (readonly [string, DnsRecord | Schema<'ReturnPathRecord'>])[] => [
  ['DKIM', d.dkim],
  ['SPF (advice, not required: merge it into an SPF record the domain already has)', d.spf],
  ...(d.return_path_records
    ? ([
        ['Return-path MX (bounces come back to Mailroom)', d.return_path_records.mx],
        ['Return-path SPF (aligned SPF for mail from the domain)', d.return_path_records.spf],
      ] as const)
    : []),
];

const CHECK_NAMES: readonly (readonly [keyof CheckedDomain['checks'], string])[] = [
  ['verification', 'verification'],
  ['dkim', 'dkim'],
  ['spf', 'spf (advice)'],
  ['return_path_mx', 'return-path mx'],
  ['return_path_spf', 'return-path spf'],
];

/** A check's status in a colour that says how it went. */
const checkStyle = (ctx: Context) => (status: string) => (status === 'ok' ? ctx.style.green(status) : status === 'error' ? ctx.style.red(status) : ctx.style.yellow(status));

/** Verify's answer: the summary, a table of the records, and for each one not ok what DNS has against what it should. */
function checkLines(d: CheckedDomain, ctx: Context): string[] {
  // The return-path checks are there only for a domain with a return-path host.
  const rows = CHECK_NAMES.flatMap(([key, label]) => {
    const check = d.checks[key];
    return check ? [{ label, check }] : [];
  });
  const table = renderTable(
    rows,
    [
      { header: 'RECORD', value: (r) => r.label },
      { header: 'STATUS', value: (r) => r.check.status, style: checkStyle(ctx) },
      { header: 'NAME', value: (r) => r.check.record_name },
      { header: 'REASON', value: (r) => r.check.reason },
    ],
    ctx.style,
  );
  const fixes = rows
    .filter((r) => r.check.status !== 'ok')
    .flatMap(({ label, check }) => ['', `  ${ctx.style.bold(label)}`, ...valueLines('found', check.found), ...valueLines('expected', [expectedOf(label, check, d)])]);
  return [d.summary, '', ...table, ...fixes];
}

const expectedOf = (label: string, check: RecordCheck, d: CheckedDomain) =>
  label === 'verification' ? `${check.expected} — lost it? mailroom domains records ${d.domain} makes a new one` : check.expected;

const valueLines = (what: string, values: readonly string[] | null): string[] =>
  (values ?? ['(nothing)']).map((v, i) => `    ${(i === 0 ? what : '').padEnd(8)} ${safeLine(v)}`);

function domainFields(d: SendingDomain, ctx: Context): string[] {
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
      const records: (readonly [string, DnsRecord | Schema<'ReturnPathRecord'>])[] = [
        ['Verification (shown only now: keep it until it is published)', created.verification],
        ...signingRecords(created),
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
      ctx.show(domain, () => [...domainFields(domain, ctx), '', ...recordLines(signingRecords(domain), ctx)]);
    }),
  );

  leaf(domains, {
    name: 'verify <domain>',
    description: 'look the records up now: the domain becomes verified when the verification record matches; a table says, per record, what is wrong',
    examples: ['mailroom domains verify acme.example', `until mailroom domains verify acme.example --json | grep -q '"status":"verified"'; do sleep 60; done`],
  }).action(
    run(async (ctx, [value = '']) => {
      const api = ctx.api();
      const domain = await api.post('/app/api/sending-domains/{domain_id}/verify', { path: { domain_id: await domainId(api, value) } });
      ctx.show(domain, () => checkLines(domain, ctx));
    }),
  );

  leaf(domains, {
    name: 'records <domain>',
    description: "the DNS records to publish again; for a pending domain with a new verification token (only its hash is kept, so the earlier token stops verifying). 'show' shows DKIM and SPF without a new token",
    examples: ['mailroom domains records acme.example'],
  }).action(
    run(async (ctx, [value = '']) => {
      const api = ctx.api();
      const path = { domain_id: await domainId(api, value) };
      const domain = await api.get('/app/api/sending-domains/{domain_id}', { path });
      if (domain.status === 'verified') {
        ctx.show(domain, () => [`${domain.domain} is verified: it needs no verification record any more.`, '', ...recordLines(signingRecords(domain), ctx)]);
        return;
      }
      const again = await api.post('/app/api/sending-domains/{domain_id}/records', { path });
      ctx.show(again, () => [
        `${again.domain} has a new verification token: the earlier one no longer verifies. Publish these TXT records in its DNS:`,
        '',
        ...recordLines([['Verification (shown only now)', again.verification], ...signingRecords(again)], ctx),
        '',
        `Then run: mailroom domains verify ${again.domain}`,
      ]);
    }),
  );

  leaf(domains, {
    name: 'delete <domain>',
    description: 'delete a sending domain; refused while mailboxes are in it (delete them first: their service tokens go with them)',
    examples: ['mailroom domains delete acme.example --yes'],
  })
    .option('--yes', 'confirm: the domain, its DKIM key and its verification go for good')
    .action(
      run<{ yes?: boolean }>(async (ctx, [value = ''], options) => {
        if (!options.yes) throw new CliError(`deleting ${value} cannot be undone (its DKIM key goes with it); pass --yes to go ahead`);
        const api = ctx.api();
        const answer = await api.delete('/app/api/sending-domains/{domain_id}', { path: { domain_id: await domainId(api, value) } });
        ctx.show(answer, () => [`deleted ${answer.domain} (${answer.domain_id})`]);
      }),
    );
}

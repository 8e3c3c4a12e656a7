import type { Command } from 'commander';
import { given, type Schema } from './api.types.js';
import { group, leaf, run, type Context } from './context.js';
import { saveDownload } from './download.js';
import { ApiError, CliError } from './errors.js';
import { formatBytes, pageFooter, relativeTime, renderFields, renderTable, safeLine, safeText } from './format.js';
import type { ApiClient } from './http-client.js';
import { withPaging, type PageOptions } from './options.js';
import { readTextFile } from './prompt.js';

type DnsRecord = Schema<'SandboxDnsRecord'>;
type CapturedMessage = Schema<'CapturedMessage'>;

/** What the server answers when it has no sandbox routes: it runs without --sandbox. */
const NOT_A_SANDBOX = 'this server is not running in sandbox mode: start it with mailroom serve --sandbox (npm run sandbox)';

/** The client, with a server that has no sandbox routes reported as such rather than as an unknown route. */
function sandboxApi(ctx: Context): ApiClient {
  const api = ctx.api();
  const explain = async <T>(call: Promise<T>): Promise<T> => {
    try {
      return await call;
    } catch (err) {
      if (err instanceof ApiError && err.status === 404 && err.code === 'not_found' && err.detail.startsWith('no route')) throw new CliError(NOT_A_SANDBOX);
      throw err;
    }
  };
  return {
    ...api,
    get: (path, ...request) => explain(api.get(path, ...request)),
    post: (path, ...request) => explain(api.post(path, ...request)),
    delete: (path, ...request) => explain(api.delete(path, ...request)),
    download: (path, ...request) => explain(api.download(path, ...request)),
  };
}

function recordTable(records: readonly DnsRecord[], ctx: Context): string[] {
  return renderTable(
    records,
    [
      { header: 'NAME', value: (r) => r.name },
      { header: 'TYPE', value: (r) => r.type },
      { header: 'VALUE', value: (r) => r.value, max: 80 },
    ],
    ctx.style,
  );
}

type DnsType = Schema<'SandboxDnsRecord'>['type'];
/** A record to publish: its type as the user gave it (the server refuses one it does not serve). */
interface RecordInput {
  name: string;
  type: DnsType;
  value: string;
}

/** Every `{record_name, record_type, record_value}` in a JSON document, wherever it sits (a domain's create answer). */
export function recordsIn(document: unknown): RecordInput[] {
  const found: RecordInput[] = [];
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(visit);
    if (typeof value !== 'object' || value === null) return;
    const { record_name: name, record_type: type, record_value: recordValue } = value as Record<string, unknown>;
    if (typeof name === 'string' && typeof type === 'string' && typeof recordValue === 'string') found.push({ name, type: given<DnsType>(type), value: recordValue });
    Object.values(value).forEach(visit);
  };
  visit(document);
  return found;
}

function registerDnsCommands(sandbox: Command): void {
  const dns = group(sandbox, 'dns', "records the sandbox's DNS server answers (owner or admin)", [
    'mailroom sandbox dns set _dmarc.acme.example TXT "v=DMARC1; p=none"',
    'mailroom domains create acme.example --json | mailroom sandbox dns publish',
  ]);

  leaf(dns, { name: 'list', isDefault: true, description: 'the records this workspace published', examples: ['mailroom sandbox dns list'] }).action(
    run(async (ctx) => {
      const answer = await sandboxApi(ctx).get('/app/api/sandbox/dns-records');
      ctx.show(answer, () => (answer.dns_records.length === 0 ? ['no sandbox DNS records yet: mailroom sandbox dns set <name> <type> <value>'] : recordTable(answer.dns_records, ctx)));
    }),
  );

  leaf(dns, {
    name: 'set <name> <type> <value>',
    description: 'publish a record (A, AAAA, CNAME, MX, TXT), replacing the records of that name and type, or with --add beside them',
    examples: [
      'mailroom sandbox dns set mx.acme.example A 192.0.2.10',
      'mailroom sandbox dns set acme.example MX "10 mx.acme.example"',
      'mailroom sandbox dns set acme.example TXT "v=spf1 -all" --add',
    ],
  })
    .option('--add', 'keep the records the name has of that type')
    .action(
      run<{ add?: boolean }>(async (ctx, [name = '', type = '', value = ''], options) => {
        const api = sandboxApi(ctx);
        const records: RecordInput[] = [{ name, type: given<DnsType>(type), value }];
        if (options.add) {
          // The server compares names and types normalized; so does this, closely enough for what it publishes.
          const key = (r: { name: string; type: string }) => `${r.name.toLowerCase().replace(/\.$/, '')} ${r.type.toUpperCase()}`;
          const { dns_records } = await api.get('/app/api/sandbox/dns-records');
          records.unshift(...dns_records.filter((r) => key(r) === key(records[0]!)).map((r) => ({ name: r.name, type: r.type, value: r.value })));
        }
        const answer = await api.post('/app/api/sandbox/dns-records', { body: { records } });
        ctx.show(answer, () => answer.dns_records.map((r) => `published ${r.name} ${r.type} ${safeLine(r.value)}`));
      }),
    );

  leaf(dns, {
    name: 'publish [file]',
    description: 'publish every record a JSON answer names (record_name, record_type, record_value), such as domains create --json prints; - or no file reads standard input',
    examples: ['mailroom domains create acme.example --json | mailroom sandbox dns publish', 'mailroom sandbox dns publish created.json'],
  }).action(
    run(async (ctx, [file = '-']) => {
      let document: unknown;
      try {
        document = JSON.parse(await readTextFile(file)) as unknown;
      } catch (err) {
        if (err instanceof CliError) throw err;
        throw new CliError(`${file === '-' ? 'standard input' : file} is not JSON: give the --json answer of mailroom domains create`);
      }
      const records = recordsIn(document);
      if (records.length === 0) throw new CliError('no DNS records found (objects with record_name, record_type and record_value)');
      const answer = await sandboxApi(ctx).post('/app/api/sandbox/dns-records', { body: { records } });
      ctx.show(answer, () => [`published ${answer.dns_records.length === 1 ? '1 record' : `${answer.dns_records.length} records`}:`, ...recordTable(answer.dns_records, ctx)]);
    }),
  );

  leaf(dns, {
    name: 'delete <name> [type]',
    description: 'delete the records this workspace published for a name (of one type when given)',
    examples: ['mailroom sandbox dns delete acme.example MX', 'mailroom sandbox dns delete _mailroom-verification.acme.example'],
  }).action(
    run(async (ctx, [name = '', type]) => {
      const answer = await sandboxApi(ctx).delete('/app/api/sandbox/dns-records/{name}', { path: { name }, query: { type: given<DnsType>(type) } });
      ctx.show(answer, () => [`deleted ${answer.deleted === 1 ? '1 record' : `${answer.deleted} records`} of ${name}`]);
    }),
  );
}

function capturedFields(c: CapturedMessage, ctx: Context): string[] {
  return renderFields(
    [
      ['Captured', c.capture_id],
      ['Message', c.message_id],
      ['Subject', c.subject],
      ['Envelope from', c.mail_from],
      ['Recipients', c.recipients.join(', ')],
      ['Stored', c.stored.length === 0 ? null : c.stored.map((s) => (s.address === s.mailbox ? `${s.mailbox} (${s.message_id})` : `${s.address} → ${s.mailbox} (${s.message_id})`)).join(', ')],
      ['Size', formatBytes(c.size)],
      ['When', relativeTime(c.captured_at)],
    ],
    ctx.style,
  );
}

function registerOutboxCommands(sandbox: Command): void {
  withPaging(
    leaf(sandbox, {
      name: 'outbox',
      description: 'outbound mail the sandbox captured instead of delivering, newest first',
      examples: ['mailroom sandbox outbox', 'mailroom sandbox outbox --json | jq -r ".captured_messages[0].capture_id"'],
    }),
  ).action(
    run<PageOptions>(async (ctx, _args, options) => {
      const page = await sandboxApi(ctx).get('/app/api/sandbox/outbox', { query: { limit: options.limit, offset: options.offset } });
      ctx.show(page, () => [
        ...(page.captured_messages.length === 0
          ? []
          : renderTable(
              page.captured_messages,
              [
                { header: 'ID', value: (c) => c.capture_id },
                { header: 'TO', value: (c) => c.recipients.join(', '), max: 40 },
                { header: 'SUBJECT', value: (c) => c.subject, max: 50 },
                { header: 'STORED', value: (c) => (c.stored.length === 0 ? '' : String(c.stored.length)) },
                { header: 'CAPTURED', value: (c) => relativeTime(c.captured_at), style: (t) => ctx.style.dim(t) },
              ],
              ctx.style,
            )),
        pageFooter(page, page.captured_messages.length, ['captured message', 'captured messages']),
      ]);
    }),
  );

  leaf(sandbox, { name: 'show <capture_id>', description: 'one captured message: who it was for, then its full MIME source', examples: ['mailroom sandbox show cap_01m7yk2b3c4d5e6f7g8h9j0k1m'] }).action(
    run(async (ctx, [id = '']) => {
      const captured = await sandboxApi(ctx).get('/app/api/sandbox/outbox/{capture_id}', { path: { capture_id: id } });
      ctx.show(captured, () => [...capturedFields(captured, ctx), '', safeText(captured.raw).trimEnd()]);
    }),
  );

  leaf(sandbox, {
    name: 'raw <capture_id>',
    description: 'the captured message byte for byte (message/rfc822), on standard output or into a file',
    examples: ['mailroom sandbox raw cap_01m7yk2b3c4d5e6f7g8h9j0k1m -o receipt.eml'],
  })
    .option('-o, --output <path>', 'a file or a directory instead of standard output')
    .option('--force', 'replace the file if it exists')
    .action(
      run<{ output?: string; force?: boolean }>(async (ctx, [id = ''], options) => {
        const download = await sandboxApi(ctx).download('/app/api/sandbox/outbox/{capture_id}/raw', { path: { capture_id: id } });
        const saved = await saveDownload(download, { output: options.output ?? '-', force: options.force, fallbackName: `${id}.eml` });
        if (saved.path === null) return;
        ctx.show({ ok: true, ...saved }, () => [`saved ${saved.path} (${formatBytes(saved.bytes)})`]);
      }),
    );

  leaf(sandbox, { name: 'clear', description: "delete the workspace's captured messages", examples: ['mailroom sandbox clear --yes'] })
    .option('--yes', 'confirm: the captured copies are gone for good (sent mail and its status stay)')
    .action(
      run<{ yes?: boolean }>(async (ctx, _args, options) => {
        if (!options.yes) throw new CliError('clearing the outbox cannot be undone; pass --yes to go ahead');
        const answer = await sandboxApi(ctx).delete('/app/api/sandbox/outbox');
        ctx.show(answer, () => [`deleted ${answer.deleted === 1 ? '1 captured message' : `${answer.deleted} captured messages`}`]);
      }),
    );
}

function registerCatchAllCommands(sandbox: Command): void {
  const catchAll = group(sandbox, 'catch-all', "mail to unknown addresses of a domain goes to one mailbox (owner or admin)", [
    'mailroom sandbox catch-all set everything@mailroom.localhost',
  ]);

  leaf(catchAll, { name: 'list', isDefault: true, description: 'the catch-all mailboxes of the workspace', examples: ['mailroom sandbox catch-all list'] }).action(
    run(async (ctx) => {
      const answer = await sandboxApi(ctx).get('/app/api/sandbox/catch-alls');
      ctx.show(answer, () =>
        answer.catch_alls.length === 0
          ? ['no catch-all mailboxes: mailroom sandbox catch-all set <mailbox>']
          : renderTable(
              answer.catch_alls,
              [
                { header: 'DOMAIN', value: (c) => c.domain },
                { header: 'MAILBOX', value: (c) => c.mailbox },
              ],
              ctx.style,
            ),
      );
    }),
  );

  leaf(catchAll, {
    name: 'set <mailbox>',
    description: "send mail for every unknown address of the mailbox's domain to the mailbox",
    examples: ['mailroom sandbox catch-all set everything@mailroom.localhost'],
  }).action(
    run(async (ctx, [mailbox = '']) => {
      const answer = await sandboxApi(ctx).post('/app/api/sandbox/catch-alls', { body: { mailbox } });
      ctx.show(answer, () => [`mail to unknown addresses of ${answer.domain} now goes to ${answer.mailbox}`]);
    }),
  );

  leaf(catchAll, { name: 'delete <domain>', description: 'turn the catch-all of a domain off', examples: ['mailroom sandbox catch-all delete mailroom.localhost'] }).action(
    run(async (ctx, [domain = '']) => {
      const answer = await sandboxApi(ctx).delete('/app/api/sandbox/catch-alls/{domain}', { path: { domain } });
      ctx.show(answer, () => [`no catch-all for ${domain} any more: mail to its unknown addresses is refused`]);
    }),
  );
}

/** `mailroom sandbox …`: the commands of a server started with --sandbox (decision 260). */
export function registerSandboxCommands(program: Command): void {
  const sandbox = group(program, 'sandbox', 'a server started with --sandbox: its DNS records, captured mail and catch-alls', [
    'mailroom sandbox status',
    'mailroom sandbox outbox',
  ]);

  leaf(sandbox, { name: 'status', isDefault: true, description: 'whether the server is a sandbox, and where its DNS server listens', examples: ['mailroom sandbox status'] }).action(
    run(async (ctx) => {
      const answer = await sandboxApi(ctx).get('/app/api/sandbox');
      ctx.show(answer, () => [`${ctx.server} is a sandbox; its DNS server is ${answer.dns_server} (UDP and TCP)`]);
    }),
  );
  registerDnsCommands(sandbox);
  registerOutboxCommands(sandbox);
  registerCatchAllCommands(sandbox);
}

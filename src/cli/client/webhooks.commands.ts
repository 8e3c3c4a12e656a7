import { randomBytes } from 'node:crypto';
import { Option, type Command } from 'commander';
import type { Schema } from './api.types.js';
import { group, leaf, run, type Context } from './context.js';
import { CliError } from './errors.js';
import { relativeTime, renderFields, renderTable } from './format.js';
import { collect, integer } from './options.js';

type Webhook = Schema<'Webhook'>;
type EventName = Webhook['event_types'][number];
/** Event names as the user gave them: the server refuses an unknown one (invalid_event_type), naming those it knows. */
const asEventNames = (names: string[]): EventName[] => names as EventName[];
/** Bytes of a generated signing secret (Standard Webhooks takes 24 to 64). */
const SECRET_BYTES = 32;
const DEFAULT_TEST_EVENT = 'message.received';

/** Longest walk `recover` follows (calls of 5000 events each): a runaway loop ends, a month of events does not. */
const MAX_RECOVER_CALLS = 1000;

/** `--since`: an ISO 8601 date-time as the API takes it, or an age such as 30m, 6h or 2d (before now). */
export function sinceOption(value: string, now = Date.now()): string {
  const age = /^(\d+)\s*(m|h|d)$/i.exec(value.trim());
  if (!age) return value;
  const unit = { m: 60_000, h: 3_600_000, d: 86_400_000 }[age[2]!.toLowerCase() as 'm' | 'h' | 'd'];
  return new Date(now - Number(age[1]) * unit).toISOString();
}

const events = (w: Webhook) => (w.event_types.length === 0 ? 'all events' : w.event_types.join(', '));

function webhookFields(w: Webhook, ctx: Context): string[] {
  return renderFields(
    [
      ['Webhook', w.webhook_id],
      ['URL', w.url],
      ['Events', events(w)],
      ['Active', w.active ? 'yes' : 'no (no deliveries; mailroom webhooks edit --active turns it back on)'],
      ...(w.disabled_reason === null ? [] : ([['Disabled', `${relativeTime(w.disabled_at ?? '')}: ${w.disabled_reason}`]] as Array<[string, string]>)),
      ['Signed', w.has_secret ? 'yes' : 'no (set a secret with --generate-secret)'],
      ['Created', relativeTime(w.created_at)],
      ['Updated', relativeTime(w.updated_at)],
    ],
    ctx.style,
  );
}

interface SecretOptions {
  secret?: string;
  generateSecret?: boolean;
}

/** The secret to send (given or generated), and whether to show it: a generated one is shown this once. */
function secretFrom(options: SecretOptions): string | undefined {
  if (options.generateSecret) return `whsec_${randomBytes(SECRET_BYTES).toString('base64')}`;
  return options.secret;
}

function secretLines(ctx: Context, secret: string | undefined, options: SecretOptions): string[] {
  if (!options.generateSecret || !secret) return [];
  return ['', 'Signing secret (shown only now; the server never shows it again):', '', `  ${ctx.style.bold(secret)}`];
}

function withSecretOptions(command: Command): Command {
  return command
    .addOption(new Option('--secret <whsec>', 'the signing secret: whsec_ followed by base64 (Standard Webhooks)').conflicts('generateSecret'))
    .option('--generate-secret', 'make a new random signing secret and print it once');
}

export function registerWebhookCommands(program: Command): void {
  const webhooks = group(program, 'webhooks', 'signed HTTP notifications of mail events', [
    'mailroom webhooks create --url https://hooks.example.com/mailroom --event message.received --generate-secret',
    'mailroom webhooks deliveries whk_01m7ym0q3f4r5t6y7u8i9o0p1a',
  ]);

  leaf(webhooks, { name: 'list', isDefault: true, description: 'the webhook endpoints of the workspace', examples: ['mailroom webhooks list'] }).action(
    run(async (ctx) => {
      const answer = await ctx.api().get('/app/api/webhooks');
      ctx.show(answer, () =>
        answer.webhooks.length === 0
          ? ['no webhooks yet: mailroom webhooks create --url <url>']
          : renderTable(
              answer.webhooks,
              [
                { header: 'ID', value: (w) => w.webhook_id },
                { header: 'URL', value: (w) => w.url, max: 50 },
                { header: 'EVENTS', value: events, max: 40 },
                { header: 'ACTIVE', value: (w) => (w.active ? 'yes' : w.disabled_at === null ? 'no' : 'disabled'), style: (t, w) => (w.active ? ctx.style.green(t) : ctx.style.red(t)) },
                { header: 'SIGNED', value: (w) => (w.has_secret ? 'yes' : 'no') },
                { header: 'CREATED', value: (w) => relativeTime(w.created_at), style: (t) => ctx.style.dim(t) },
              ],
              ctx.style,
            ),
      );
    }),
  );

  leaf(webhooks, { name: 'show <webhook_id>', description: 'one webhook endpoint', examples: ['mailroom webhooks show whk_01m7ym0q3f4r5t6y7u8i9o0p1a'] }).action(
    run(async (ctx, [id = '']) => {
      const webhook = await ctx.api().get('/app/api/webhooks/{webhook_id}', { path: { webhook_id: id } });
      ctx.show(webhook, () => webhookFields(webhook, ctx));
    }),
  );

  withSecretOptions(
    leaf(webhooks, {
      name: 'create',
      description: 'add an endpoint (a public http or https URL); without --event it gets every event',
      examples: [
        'mailroom webhooks create --url https://hooks.example.com/mailroom --generate-secret',
        'mailroom webhooks create --url https://hooks.example.com/bounces --event message.bounced,message.complained --generate-secret',
      ],
    })
      .requiredOption('--url <url>', 'where events are POSTed')
      .option('--event <type>', 'an event type to send (repeat, or separate with commas); none means all', collect),
  ).action(
    run<SecretOptions & { url: string; event?: string[] }>(async (ctx, _args, options) => {
      const secret = secretFrom(options);
      const webhook = await ctx.api().post('/app/api/webhooks', { body: { url: options.url, event_types: asEventNames(options.event ?? []), secret } });
      ctx.show(options.generateSecret ? { ...webhook, secret } : webhook, () => [`created ${webhook.webhook_id}`, ...webhookFields(webhook, ctx), ...secretLines(ctx, secret, options)]);
    }),
  );

  withSecretOptions(
    leaf(webhooks, {
      name: 'edit <webhook_id>',
      description: 'change the URL, the events, the secret or the active state',
      examples: ['mailroom webhooks edit whk_01m7ym0q3f4r5t6y7u8i9o0p1a --event message.received --event message.bounced', 'mailroom webhooks edit whk_01m7ym0q3f4r5t6y7u8i9o0p1a --active --generate-secret'],
    })
      .option('--url <url>', 'a new URL')
      .addOption(new Option('--event <type>', 'the event types to send from now on (repeat, or separate with commas)').argParser(collect).conflicts('allEvents'))
      .option('--all-events', 'send every event type')
      .addOption(new Option('--active', 'deliver to it again').conflicts('inactive'))
      .option('--inactive', 'stop delivering to it'),
  ).action(
    run<SecretOptions & { url?: string; event?: string[]; allEvents?: boolean; active?: boolean; inactive?: boolean }>(async (ctx, [id = ''], options) => {
      const secret = secretFrom(options);
      const changes: Schema<'WebhookChange'> = {};
      if (options.url !== undefined) changes.url = options.url;
      if (options.event !== undefined) changes.event_types = asEventNames(options.event);
      if (options.allEvents) changes.event_types = [];
      if (secret !== undefined) changes.secret = secret;
      if (options.active) changes.active = true;
      if (options.inactive) changes.active = false;
      if (Object.keys(changes).length === 0) throw new CliError('nothing to change: give --url, --event, --all-events, --secret, --generate-secret, --active or --inactive');
      const webhook = await ctx.api().patch('/app/api/webhooks/{webhook_id}', { path: { webhook_id: id }, body: changes });
      ctx.show(options.generateSecret ? { ...webhook, secret } : webhook, () => [`updated ${webhook.webhook_id}`, ...webhookFields(webhook, ctx), ...secretLines(ctx, secret, options)]);
    }),
  );

  leaf(webhooks, { name: 'delete <webhook_id>', description: 'remove an endpoint', examples: ['mailroom webhooks delete whk_01m7ym0q3f4r5t6y7u8i9o0p1a'] }).action(
    run(async (ctx, [id = '']) => {
      const answer = await ctx.api().delete('/app/api/webhooks/{webhook_id}', { path: { webhook_id: id } });
      ctx.show(answer, () => [`deleted ${id}`]);
    }),
  );

  leaf(webhooks, {
    name: 'deliveries <webhook_id>',
    description: 'the delivery attempts to an endpoint, newest first',
    examples: ['mailroom webhooks deliveries whk_01m7ym0q3f4r5t6y7u8i9o0p1a --limit 20'],
  })
    .option('--limit <n>', 'how many to show (default 50)', integer)
    .action(
      run<{ limit?: number }>(async (ctx, [id = ''], options) => {
        const answer = await ctx.api().get('/app/api/webhooks/{webhook_id}/deliveries', { path: { webhook_id: id }, query: { limit: options.limit } });
        ctx.show(answer, () =>
          answer.deliveries.length === 0
            ? ['no deliveries yet']
            : renderTable(
                answer.deliveries,
                [
                  { header: 'WHEN', value: (d) => relativeTime(d.delivered_at), style: (t) => ctx.style.dim(t) },
                  { header: 'EVENT', value: (d) => d.event_type },
                  { header: 'EVENT ID', value: (d) => d.event_id },
                  { header: 'ATTEMPT', value: (d) => String(d.attempt), align: 'right' },
                  { header: 'RESULT', value: (d) => (d.success ? 'ok' : 'failed'), style: (t, d) => (d.success ? ctx.style.green(t) : ctx.style.red(t)) },
                  { header: 'HTTP', value: (d) => (d.status_code === null ? '-' : String(d.status_code)), align: 'right' },
                  { header: 'TIME', value: (d) => (d.duration_ms === null ? '-' : `${d.duration_ms} ms`), align: 'right' },
                  { header: 'ERROR', value: (d) => d.error ?? '', max: 60 },
                ],
                ctx.style,
              ),
        );
      }),
    );

  leaf(webhooks, {
    name: 'test <webhook_id>',
    description: `queue one test event for this endpoint only (default ${DEFAULT_TEST_EVENT})`,
    examples: ['mailroom webhooks test whk_01m7ym0q3f4r5t6y7u8i9o0p1a', 'mailroom webhooks test whk_01m7ym0q3f4r5t6y7u8i9o0p1a --event domain.verified'],
  })
    .option('--event <type>', 'the event type of the test event', DEFAULT_TEST_EVENT)
    .action(
      run<{ event: string }>(async (ctx, [id = ''], options) => {
        const answer = await ctx.api().post('/app/api/webhooks/{webhook_id}/test', { path: { webhook_id: id }, body: { event_type: asEventNames([options.event])[0]! } });
        ctx.show(answer, () => [`queued test event ${answer.event_id} (${options.event}) for ${id}; mailroom webhooks deliveries ${id} shows how it went`]);
      }),
    );
  leaf(webhooks, {
    name: 'recover <webhook_id>',
    description: 'send again every event since a time that the endpoint did not receive (failed, given up, or while it was off)',
    examples: ['mailroom webhooks recover whk_01m7ym0q3f4r5t6y7u8i9o0p1a --since 2026-11-30T08:00:00Z', 'mailroom webhooks recover whk_01m7ym0q3f4r5t6y7u8i9o0p1a --since 2d'],
  })
    .requiredOption('--since <time>', 'an ISO 8601 date-time with a zone, or an age: 30m, 6h, 2d (at most 30 days)', (value: string) => sinceOption(value))
    .action(
      run<{ since: string }>(async (ctx, [id = ''], options) => {
        // The server examines a bounded number of events per call; follow its next_before until the walk is done.
        let queued = 0;
        let before: string | undefined;
        for (let calls = 0; calls < MAX_RECOVER_CALLS; calls++) {
          const body = before === undefined ? { since: options.since } : { since: options.since, before };
          const answer = await ctx.api().post('/app/api/webhooks/{webhook_id}/recover', { path: { webhook_id: id }, body });
          queued += answer.queued;
          if (answer.next_before === null) break;
          before = answer.next_before;
        }
        ctx.show({ ok: true, queued, since: options.since }, () => [
          queued === 0 ? `nothing to recover for ${id} since ${options.since}` : `queued ${queued} missed event${queued === 1 ? '' : 's'} for ${id} since ${options.since}; mailroom webhooks deliveries ${id} shows how they went`,
        ]);
      }),
    );

  leaf(webhooks, {
    name: 'replay <webhook_id> <event_id>',
    description: 'send one event to the endpoint again, with the same event id and payload',
    examples: ['mailroom webhooks replay whk_01m7ym0q3f4r5t6y7u8i9o0p1a evt_01m7yntqg5gx3bvspbyf8vkyzd'],
  }).action(
    run(async (ctx, [id = '', eventId = '']) => {
      const answer = await ctx.api().post('/app/api/webhooks/{webhook_id}/deliveries/{event_id}/replay', { path: { webhook_id: id, event_id: eventId } });
      ctx.show(answer, () => [
        answer.queued
          ? `queued ${answer.event_id} again for ${id}; mailroom webhooks deliveries ${id} shows how it went`
          : `${answer.event_id} is already waiting for ${id} (not queued twice); mailroom webhooks deliveries ${id} shows how it went`,
      ]);
    }),
  );
}

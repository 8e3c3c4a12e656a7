import type { Command } from 'commander';
import type { Schema } from './api.types.js';
import { group, leaf, run, type Context } from './context.js';
import { pageFooter, relativeTime, renderFields, renderTable } from './format.js';
import { withPaging, type PageOptions } from './options.js';

type Suppression = Schema<'Suppression'>;

const REASONS: Record<Suppression['reason'], string> = { hard_bounce: 'hard bounce', complaint: 'complaint', manual: 'added by hand', unsubscribed: 'unsubscribed' };
const one = (address: string) => ({ path: { address } });

function suppressionTable(ctx: Context, rows: readonly Suppression[]): string[] {
  return renderTable(
    rows,
    [
      { header: 'ADDRESS', value: (s) => s.address },
      { header: 'REASON', value: (s) => REASONS[s.reason], style: (t, s) => (s.reason === 'manual' ? t : ctx.style.red(t)) },
      { header: 'STATUS', value: (s) => s.status_code ?? '' },
      { header: 'DETAIL', value: (s) => s.detail ?? '', max: 40 },
      { header: 'ADDED', value: (s) => relativeTime(s.created_at), style: (t) => ctx.style.dim(t) },
    ],
    ctx.style,
  );
}

function suppressionFields(ctx: Context, s: Suppression): string[] {
  return renderFields(
    [
      ['Address', s.address],
      ['Reason', REASONS[s.reason]],
      ['Status', s.status_code],
      ['Detail', s.detail],
      ['Message', s.message_id],
      ['Added', relativeTime(s.created_at)],
    ],
    ctx.style,
  );
}

/** The line a send's answer adds when recipients were left out because the workspace suppresses them. */
export function suppressedNote(queued: { suppressed?: string[] | undefined }): string[] {
  const left = queued.suppressed ?? [];
  return left.length === 0 ? [] : [`not sent to ${left.join(', ')}: suppressed (mailroom suppressions show <address>)`];
}

export function registerSuppressionCommands(program: Command): void {
  const suppressions = group(program, 'suppressions', 'addresses the workspace no longer sends to: hard bounces, complaints, and ones added by hand', [
    'mailroom suppressions',
    'mailroom suppressions remove customer@example.com',
  ]);

  withPaging(
    leaf(suppressions, {
      name: 'list',
      isDefault: true,
      description: 'the suppressed addresses, newest first',
      examples: ['mailroom suppressions list', 'mailroom suppressions list --reason complaint --limit 100'],
    }),
  )
    .option('--reason <reason>', 'only hard_bounce, complaint, manual or unsubscribed')
    .action(
      run<PageOptions & { reason?: Suppression['reason'] }>(async (ctx, _args, options) => {
        const page = await ctx.api().get('/app/api/suppressions', { query: { reason: options.reason, limit: options.limit, offset: options.offset } });
        ctx.show(page, () => [
          ...(page.suppressions.length > 0 ? suppressionTable(ctx, page.suppressions) : []),
          ctx.style.dim(pageFooter(page, page.suppressions.length, ['suppressed address', 'suppressed addresses'])),
        ]);
      }),
    );

  leaf(suppressions, {
    name: 'show <address>',
    description: 'why an address is suppressed, and the message that caused it',
    examples: ['mailroom suppressions show customer@example.com'],
  }).action(
    run(async (ctx, [address = '']) => {
      const found = await ctx.api().get('/app/api/suppressions/{address}', one(address));
      ctx.show(found, () => suppressionFields(ctx, found));
    }),
  );

  leaf(suppressions, {
    name: 'add <address>',
    description: 'suppress an address by hand (one suppressed already keeps its entry)',
    examples: ['mailroom suppressions add customer@example.com --detail "asked us to stop by phone"'],
  })
    .option('--detail <text>', 'a note: why')
    .action(
      run<{ detail?: string }>(async (ctx, [address = ''], options) => {
        const added = await ctx.api().post('/app/api/suppressions', { body: { address, detail: options.detail } });
        // An address suppressed already keeps its first entry, which the answer shows (a bounce stays a bounce).
        ctx.show(added, () => [`${added.address} is suppressed (${REASONS[added.reason]}, ${relativeTime(added.created_at)})`]);
      }),
    );

  leaf(suppressions, {
    name: 'remove <address>',
    description: 'lift a suppression: the address can be sent to again',
    examples: ['mailroom suppressions remove customer@example.com'],
  }).action(
    run(async (ctx, [address = '']) => {
      const removed = await ctx.api().delete('/app/api/suppressions/{address}', one(address));
      ctx.show(removed, () => [`${removed.address} is no longer suppressed`]);
    }),
  );
}

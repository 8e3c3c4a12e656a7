import type { Command } from 'commander';
import { everyOf, given, type Schema } from './api.types.js';
import { group, leaf, run, type Context } from './context.js';
import { pageFooter, plural, relativeTime, renderFields, renderTable } from './format.js';
import { withPaging, type PageOptions } from './options.js';

type ListEntry = Schema<'ListEntry'>;

const DIRECTIONS = everyOf<ListEntry['direction']>()(['inbound', 'outbound']);
const LIST_TYPES = everyOf<ListEntry['list_type']>()(['allow', 'block']);
/** Largest page the server gives; `lists` without a list name shows the first page of each list. */
const MAX_PAGE = 500;

// The entry may hold slashes (CIDRs): the client encodes it as one segment, which the server takes as the rest of the path.
const list = (direction: string, list_type: string) => ({ path: { direction: given<ListEntry['direction']>(direction), list_type: given<ListEntry['list_type']>(list_type) } });
const entryOf = (direction: string, list_type: string, entry: string) => ({ path: { ...list(direction, list_type).path, entry } });

function entryTable(ctx: Context, entries: readonly ListEntry[]): string[] {
  return renderTable(
    entries,
    [
      { header: 'LIST', value: (e) => `${e.direction} ${e.list_type}`, style: (t, e) => (e.list_type === 'block' ? ctx.style.red(t) : ctx.style.green(t)) },
      { header: 'ENTRY', value: (e) => e.entry },
      { header: 'KIND', value: (e) => e.kind },
      { header: 'REASON', value: (e) => e.reason ?? '', max: 40 },
      { header: 'ADDED', value: (e) => relativeTime(e.created_at), style: (t) => ctx.style.dim(t) },
    ],
    ctx.style,
  );
}

async function showLists(ctx: Context, direction: string | undefined, listType: string | undefined, options: PageOptions): Promise<void> {
  const api = ctx.api();
  if (direction !== undefined && listType !== undefined) {
    const page = await api.get('/app/api/lists/{direction}/{list_type}', { ...list(direction, listType), query: { limit: options.limit, offset: options.offset } });
    ctx.show(page, () => [...(page.entries.length > 0 ? entryTable(ctx, page.entries) : []), ctx.style.dim(pageFooter(page, page.entries.length, ['entry', 'entries']))]);
    return;
  }
  const names = (direction === undefined ? DIRECTIONS : [direction]).flatMap((d) => LIST_TYPES.map((t) => [d, t] as const));
  const pages = await Promise.all(names.map(([d, t]) => api.get('/app/api/lists/{direction}/{list_type}', { ...list(d, t), query: { limit: MAX_PAGE } })));
  const entries = pages.flatMap((p) => p.entries);
  const total = pages.reduce((sum, p) => sum + p.total, 0);
  ctx.show({ entries, total }, () => {
    if (total === 0) return ['no entries: every list is empty'];
    const more = pages.some((p) => p.total > p.entries.length) ? `; a list has more than ${MAX_PAGE}: name it to page through it` : '';
    return [...entryTable(ctx, entries), ctx.style.dim(`${plural(total, 'entry', 'entries')} in ${pages.length} lists${more}`)];
  });
}

export function registerListCommands(program: Command): void {
  const lists = group(program, 'lists', 'allow and block lists, inbound (checked at RCPT TO) and outbound (checked when sending)', [
    'mailroom lists',
    'mailroom lists add inbound block spammer@bad.example --reason "sends junk"',
  ]);

  withPaging(
    leaf(lists, {
      name: 'list [direction] [list_type]',
      isDefault: true,
      description: 'the entries of one list (inbound|outbound, allow|block), or of all four',
      examples: ['mailroom lists list', 'mailroom lists list inbound block --limit 100'],
    }),
  ).action(run<PageOptions>((ctx, [direction, listType], options) => showLists(ctx, direction, listType, options)));

  leaf(lists, {
    name: 'add <direction> <list_type> <entry>',
    description: 'add an address, a domain (with its subdomains) or, inbound, an IP or CIDR',
    examples: ['mailroom lists add inbound block spammer@bad.example --reason "sends junk"', 'mailroom lists add inbound block 2001:db8::/32', 'mailroom lists add outbound allow partner.example'],
  })
    .option('--reason <text>', 'why (shown in the list)')
    .action(
      run<{ reason?: string }>(async (ctx, [direction = '', listType = '', entry = ''], options) => {
        const added = await ctx.api().post('/app/api/lists/{direction}/{list_type}', { ...list(direction, listType), body: { entry, reason: options.reason } });
        ctx.show(added, () => [`added ${added.entry} (${added.kind}) to the ${added.direction} ${added.list_type} list`]);
      }),
    );

  leaf(lists, {
    name: 'show <direction> <list_type> <entry>',
    description: 'one entry',
    examples: ['mailroom lists show inbound block 203.0.113.0/24'],
  }).action(
    run(async (ctx, [direction = '', listType = '', entry = '']) => {
      const found = await ctx.api().get('/app/api/lists/{direction}/{list_type}/{entry}', entryOf(direction, listType, entry));
      ctx.show(found, () =>
        renderFields(
          [
            ['List', `${found.direction} ${found.list_type}`],
            ['Entry', found.entry],
            ['Kind', found.kind],
            ['Reason', found.reason],
            ['Added', relativeTime(found.created_at)],
          ],
          ctx.style,
        ),
      );
    }),
  );

  leaf(lists, {
    name: 'remove <direction> <list_type> <entry>',
    description: 'remove an entry',
    examples: ['mailroom lists remove inbound allow partner.example'],
  }).action(
    run(async (ctx, [direction = '', listType = '', entry = '']) => {
      const removed = await ctx.api().delete('/app/api/lists/{direction}/{list_type}/{entry}', entryOf(direction, listType, entry));
      ctx.show(removed, () => [`removed ${removed.entry} from the ${direction} ${listType} list`]);
    }),
  );
}

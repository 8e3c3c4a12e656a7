import type { Command } from 'commander';
import { group, leaf, run } from './context.js';
import { CliError } from './errors.js';
import { pageFooter, relativeTime, renderTable } from './format.js';
import { collect, withPaging, type PageOptions } from './options.js';
import { threadView } from './views.js';

export function registerThreadCommands(program: Command): void {
  const threads = group(program, 'threads', 'conversations: messages grouped by reply and subject, per mailbox', [
    'mailroom threads --mailbox helpdesk@mailroom.localhost',
    'mailroom threads show thr_01m7yfer151gze8f2b9w65hgss',
  ]);

  withPaging(
    leaf(threads, {
      name: 'list',
      isDefault: true,
      description: 'threads of the active workspace, most recently active first',
      examples: ['mailroom threads list --mailbox helpdesk@mailroom.localhost --label billing'],
    })
      .option('--mailbox <address>', 'only this mailbox')
      .option('--label <label>', 'only threads in which a message has this label'),
  ).action(
    run<PageOptions & { mailbox?: string; label?: string }>(async (ctx, _args, options) => {
      const page = await ctx.api().get('/app/api/threads', {
        query: { mailbox: options.mailbox, label: options.label, limit: options.limit, offset: options.offset },
      });
      ctx.show(page, () => [
        ...(page.threads.length > 0
          ? renderTable(
              page.threads,
              [
                { header: 'ID', value: (t) => t.thread_id },
                { header: 'SUBJECT', value: (t) => t.subject || '(no subject)', max: 50, style: (s, t) => (t.unread_count > 0 ? ctx.style.bold(s) : s) },
                { header: 'MESSAGES', value: (t) => String(t.message_count), align: 'right' },
                { header: 'UNREAD', value: (t) => (t.unread_count > 0 ? String(t.unread_count) : ''), align: 'right' },
                { header: 'LABELS', value: (t) => t.labels.join(','), max: 30, style: (s) => ctx.style.cyan(s) },
                { header: 'LAST MESSAGE', value: (t) => relativeTime(t.last_message_at), style: (s) => ctx.style.dim(s) },
              ],
              ctx.style,
            )
          : []),
        ctx.style.dim(pageFooter(page, page.threads.length, ['thread', 'threads'])),
      ]);
    }),
  );

  leaf(threads, { name: 'show <thread_id>', description: 'a thread with its messages, oldest first', examples: ['mailroom threads show thr_01m7yfer151gze8f2b9w65hgss'] }).action(
    run(async (ctx, [id = '']) => {
      const thread = await ctx.api().get('/app/api/threads/{thread_id}', { path: { thread_id: id } });
      ctx.show(thread, () => threadView(thread, ctx.style));
    }),
  );

  leaf(threads, {
    name: 'label <thread_id>',
    description: 'add and remove labels on every message of a thread',
    examples: ['mailroom threads label thr_01m7yfer151gze8f2b9w65hgss --add order-1234'],
  })
    .option('--add <label>', 'a label to add (repeat, or separate with commas)', collect)
    .option('--remove <label>', 'a label to remove (repeat, or separate with commas)', collect)
    .action(
      run<{ add?: string[]; remove?: string[] }>(async (ctx, [id = ''], options) => {
        if (!options.add && !options.remove) throw new CliError('give --add or --remove (or both)');
        const answer = await ctx.api().post('/app/api/threads/{thread_id}/labels', { path: { thread_id: id }, body: { add: options.add, remove: options.remove } });
        ctx.show(answer, () => [`labels of ${id}: ${answer.labels.length > 0 ? answer.labels.join(', ') : '(none)'}`]);
      }),
    );
}

import type { Command } from 'commander';
import { group, leaf, run } from './context.js';
import { relativeTime, renderFields, renderTable } from './format.js';

export function registerMailboxCommands(program: Command): void {
  const mailboxes = group(program, 'mailboxes', 'the mailboxes of the active workspace', [
    'mailroom mailboxes',
    'mailroom mailboxes create helpdesk@mailroom.localhost --description "Help desk"',
  ]);

  leaf(mailboxes, { name: 'list', isDefault: true, description: 'list the mailboxes with their message counts', examples: ['mailroom mailboxes list'] }).action(
    run(async (ctx) => {
      const answer = await ctx.api().get('/app/api/mailboxes');
      ctx.show(answer, () =>
        answer.mailboxes.length === 0
          ? ['no mailboxes yet: mailroom mailboxes create <address>']
          : renderTable(
              answer.mailboxes,
              [
                { header: 'ADDRESS', value: (m) => m.address },
                { header: 'MESSAGES', value: (m) => String(m.message_count), align: 'right' },
                { header: 'UNREAD', value: (m) => (m.unread_count > 0 ? String(m.unread_count) : ''), align: 'right', style: (t) => ctx.style.bold(t) },
                { header: 'DESCRIPTION', value: (m) => m.description, max: 40 },
                { header: 'CREATED', value: (m) => relativeTime(m.created_at), style: (t) => ctx.style.dim(t) },
              ],
              ctx.style,
            ),
      );
    }),
  );

  leaf(mailboxes, {
    name: 'create <address>',
    description: 'create a mailbox in a hosted domain or a verified sending domain',
    examples: ['mailroom mailboxes create helpdesk@mailroom.localhost --description "Help desk"'],
  })
    .option('--description <text>', 'what the mailbox is for')
    .action(
      run<{ description?: string }>(async (ctx, [address = ''], options) => {
        const mailbox = await ctx.api().post('/app/api/mailboxes', { body: { address, description: options.description } });
        ctx.show(mailbox, () => [`created ${mailbox.address}`, ...renderFields([['Description', mailbox.description || null]], ctx.style)]);
      }),
    );
}

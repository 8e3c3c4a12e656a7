import type { Command } from 'commander';
import { composedContent, withComposeOptions, type ComposeOptions } from './compose.js';
import { leaf, run } from './context.js';
import { CliError } from './errors.js';
import { pageFooter, relativeTime, renderTable } from './format.js';
import { sendAt, withPaging, type PageOptions } from './options.js';
import { queuedLine, statusStyle } from './views.js';

interface SendOptions extends ComposeOptions {
  from: string;
  fromName?: string;
  replyTo?: string;
  at?: string;
}

export function registerSendingCommands(program: Command): void {
  withComposeOptions(
    leaf(program, {
      name: 'send',
      description: 'send a message from a mailbox of the workspace (queued for delivery; a copy goes to sent)',
      examples: [
        'mailroom send --from support@mailroom.localhost --to customer@example.com --subject "Your order" --body "It ships today."',
        'mailroom send --from support@mailroom.localhost --to a@example.com,b@example.org --subject Report --body-file report.txt --html-file report.html',
        'mailroom send --from support@mailroom.localhost --to customer@example.com --subject "Reminder" --body "See you tomorrow." --at 2026-12-01T09:00:00+01:00',
      ],
    }).requiredOption('--from <address>', 'the mailbox it is sent from'),
    { required: true },
  )
    .option('--from-name <name>', 'the display name in From')
    .option('--reply-to <address>', 'an address for Reply-To')
    .option('--at <time>', 'send it later: an ISO 8601 time up to 30 days ahead (without an offset: local time)', sendAt)
    .action(
      run<SendOptions>(async (ctx, _args, options) => {
        if (!options.to) throw new CliError('give at least one --to');
        if (options.subject === undefined) throw new CliError("give --subject (--subject '' for none)");
        const api = ctx.api();
        const { body, html } = await composedContent(options);
        if (body === undefined) throw new CliError("give --body or --body-file (--body '' for none)");
        const queued = await api.post('/app/api/send', {
          body: {
            from_mailbox: options.from,
            to: options.to,
            cc: options.cc,
            bcc: options.bcc,
            subject: options.subject,
            body,
            html,
            from_name: options.fromName,
            reply_to: options.replyTo,
            send_at: options.at,
          },
        });
        ctx.show(queued, () => [queuedLine(queued)]);
      }),
    );

  withPaging(
    leaf(program, {
      name: 'sent',
      description: 'sent messages with their delivery status, newest first',
      examples: ['mailroom sent', 'mailroom sent --mailbox support@mailroom.localhost --json'],
    }).option('--mailbox <address>', 'only messages sent from this mailbox'),
  ).action(
    run<PageOptions & { mailbox?: string }>(async (ctx, _args, options) => {
      const page = await ctx.api().get('/app/api/sent', { query: { mailbox: options.mailbox, limit: options.limit, offset: options.offset } });
      const status = statusStyle(ctx.style);
      ctx.show(page, () => [
        ...(page.messages.length > 0
          ? renderTable(
              page.messages,
              [
                { header: 'ID', value: (m) => m.message_id },
                { header: 'TO', value: (m) => `${m.to[0]?.address ?? '-'}${m.to.length > 1 ? ` +${m.to.length - 1}` : ''}`, max: 30 },
                { header: 'SUBJECT', value: (m) => m.subject || '(no subject)', max: 40 },
                { header: 'STATUS', value: (m) => (m.status === 'scheduled' && m.send_at ? `scheduled for ${m.send_at}` : m.status), style: status },
                { header: 'SENT', value: (m) => relativeTime(m.created_at), style: (t) => ctx.style.dim(t) },
                { header: 'LAST ERROR', value: (m) => m.last_error ?? '', max: 50 },
              ],
              ctx.style,
            )
          : []),
        ctx.style.dim(pageFooter(page, page.messages.length, ['sent message', 'sent messages'])),
      ]);
    }),
  );
}

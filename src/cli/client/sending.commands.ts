import type { Command } from 'commander';
import type { Schema } from './api.types.js';
import { readAttachments, repeat } from './attachments.js';
import { composedContent, withComposeOptions, type ComposeOptions } from './compose.js';
import { leaf, run } from './context.js';
import { CliError } from './errors.js';
import { pageFooter, relativeTime, renderTable } from './format.js';
import { sendAt, withPaging, type PageOptions } from './options.js';
import { readTextFile } from './prompt.js';
import { suppressedNote } from './suppressions.commands.js';
import { queuedLine, statusStyle } from './views.js';

type SendRequest = Schema<'SendRequest'>;

interface SendOptions extends ComposeOptions {
  from: string;
  fromName?: string;
  replyTo?: string;
  attach?: string[];
  at?: string;
}

export function registerSendingCommands(program: Command): void {
  withComposeOptions(
    leaf(program, {
      name: 'send',
      description: 'send a message from a mailbox of the workspace (queued for delivery; a copy goes to sent)',
      examples: [
        'mailroom send --from helpdesk@mailroom.localhost --to customer@example.com --subject "Your order" --body "It ships today."',
        'mailroom send --from helpdesk@mailroom.localhost --to a@example.com,b@example.org --subject Report --body-file report.txt --html-file report.html',
        'mailroom send --from billing@mailroom.localhost --to customer@example.com --subject Invoice --body "Attached." --attach invoice.pdf --attach terms.pdf',
        'mailroom send --from helpdesk@mailroom.localhost --to customer@example.com --subject "Reminder" --body "See you tomorrow." --at 2026-12-01T09:00:00+01:00',
      ],
    }).requiredOption('--from <address>', 'the mailbox it is sent from'),
    { required: true },
  )
    .option('--from-name <name>', 'the display name in From')
    .option('--reply-to <address>', 'an address for Reply-To')
    .option('--attach <file>', 'attach a file (repeat for more; 25 MiB in all); its type comes from its extension', repeat)
    .option('--at <time>', 'send it later: an ISO 8601 time up to 30 days ahead (without an offset: local time)', sendAt)
    .action(
      run<SendOptions>(async (ctx, _args, options) => {
        if (!options.to) throw new CliError('give at least one --to');
        if (options.subject === undefined) throw new CliError("give --subject (--subject '' for none)");
        const api = ctx.api();
        const { body, html } = await composedContent(options);
        if (body === undefined) throw new CliError("give --body or --body-file (--body '' for none)");
        const files = await readAttachments(options.attach ?? []);
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
            ...(files.length > 0 ? { attachments: files.map((f) => ({ filename: f.filename, content_type: f.contentType, content: f.content.toString('base64') })) } : {}),
            send_at: options.at,
          },
        });
        ctx.show(queued, () => [queuedLine(queued), ...suppressedNote(queued)]);
      }),
    );

  leaf(program, {
    name: 'send-batch <file>',
    description: 'send up to 100 messages at once from a JSON file (- for standard input): each queued or refused on its own',
    examples: [
      'mailroom send-batch messages.json',
      'jq -n \'{messages: [{from_mailbox: "newsletter@mailroom.localhost", to: "a@example.com", subject: "Hi", body: "Hello"}]}\' | mailroom send-batch -',
    ],
  }).action(
    run(async (ctx, args) => {
      const messages = batchMessages(await readTextFile(args[0]!), args[0]!);
      const answer = await ctx.api().post('/app/api/send/batch', { body: { messages } });
      ctx.show(answer, () => [
        ...answer.messages.map((m) => ('message_id' in m ? `${m.index}  ${m.message_id} is ${m.status}` : `${m.index}  ${ctx.style.red(`${m.status_code} ${m.error.error}`)}: ${m.error.detail}`)),
        ctx.style.dim(`${answer.queued} queued, ${answer.failed} refused (mailroom sent shows their delivery)`),
      ]);
      // A script must notice a refused message, though the request itself succeeded.
      if (answer.failed > 0) process.exitCode = 1;
    }),
  );

  withPaging(
    leaf(program, {
      name: 'sent',
      description: 'sent messages with their delivery status, newest first',
      examples: ['mailroom sent', 'mailroom sent --mailbox helpdesk@mailroom.localhost --json'],
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

/**
 * The messages of a batch file: `{"messages": [...]}` as the API takes it, or a bare array of messages (Resend's
 * shape). Each message is checked by the server, which answers for each.
 */
function batchMessages(text: string, file: string): SendRequest[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new CliError(`${file} is not JSON: ${(err as Error).message}`);
  }
  const messages = Array.isArray(parsed) ? parsed : typeof parsed === 'object' && parsed !== null ? (parsed as { messages?: unknown }).messages : undefined;
  if (!Array.isArray(messages)) throw new CliError(`${file} must hold {"messages": [...]} or an array of messages`);
  // The server validates each message on its own and names the bad ones in its answer.
  return messages as SendRequest[];
}

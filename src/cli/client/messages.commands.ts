import { Option, type Command } from 'commander';
import { given, type Schema } from './api.types.js';
import { group, leaf, run, type Context } from './context.js';
import { saveDownload } from './download.js';
import { CliError } from './errors.js';
import type { ApiClient } from './http-client.js';
import { formatBytes, pageFooter } from './format.js';
import { collect, sendAt, withPaging, type PageOptions } from './options.js';
import type { AnswerKind, AnswerOptions } from './reply.js';
import { attachmentTable, messageTable, messageView, threadView } from './views.js';

type Folder = Schema<'MessageListItem'>['folder'];

interface ListOptions extends PageOptions {
  mailbox?: string;
  folder?: string;
  label?: string;
  thread?: string;
  unread?: boolean;
  read?: boolean;
}

async function list(ctx: Context, options: ListOptions): Promise<void> {
  const page = await ctx.api().get('/app/api/messages', {
    query: {
      mailbox: options.mailbox,
      folder: given<Folder>(options.folder),
      label: options.label,
      thread_id: options.thread,
      unread: options.unread ? true : options.read ? false : undefined,
      limit: options.limit,
      offset: options.offset,
    },
  });
  ctx.show(page, () => [...(page.messages.length > 0 ? messageTable(page.messages, ctx.style) : []), ctx.style.dim(pageFooter(page, page.messages.length, ['message', 'messages']))]);
}

/** `1–50 of 1000+ messages`: a search's count stops at its cap (`total_capped`). */
function searchFooter(page: Schema<'MessagePage'>, shown: number): string {
  if (!page.total_capped) return pageFooter(page, shown, ['message', 'messages']);
  const last = page.offset + shown;
  const more = shown === page.limit ? `; next page: --offset ${last}` : '';
  return shown === 0 ? `no messages at offset ${page.offset}` : `${page.offset + 1}–${last} of ${page.total}+ messages${more}`;
}

async function search(ctx: Context, query: string, options: ListOptions): Promise<void> {
  const unknown = query.split(' ').find((word) => word.startsWith('--'));
  if (unknown !== undefined) throw new CliError(`unknown option '${unknown}' (query words start with one '-' at most)`);
  const page = await ctx.api().get('/app/api/messages', {
    query: {
      q: query,
      mailbox: options.mailbox,
      folder: given<Folder>(options.folder),
      label: options.label,
      unread: options.unread ? true : options.read ? false : undefined,
      limit: options.limit,
      offset: options.offset,
    },
  });
  ctx.show(page, () => [...(page.messages.length > 0 ? messageTable(page.messages, ctx.style) : []), ctx.style.dim(searchFooter(page, page.messages.length))]);
}

const ANSWERS: ReadonlyArray<{ kind: AnswerKind; description: string }> = [
  { kind: 'reply', description: "reply to a message's sender (its Reply-To, else its From) in $EDITOR, quoted; sends on save" },
  { kind: 'reply-all', description: 'reply to the sender and every To and Cc recipient but you, in $EDITOR, quoted; sends on save' },
  { kind: 'forward', description: 'forward a message (its text, under its From, Date, Subject and To) in $EDITOR; sends on save' },
];

/** reply, reply-all and forward: the editor by default; options for scripts. */
function registerAnswers(messages: Command): void {
  const id = 'msg_01m7yfetj82xfwa7143xbzbx1z';
  for (const { kind, description } of ANSWERS) {
    leaf(messages, {
      name: `${kind} <message_id>`,
      description,
      examples:
        kind === 'forward'
          ? [`mailroom messages forward ${id}`, `mailroom messages forward ${id} --to billing@example.com --body "See below." --draft`]
          : [`mailroom messages ${kind} ${id}`, `mailroom messages ${kind} ${id} --body "Thanks, it ships today."`, `mailroom messages ${kind} ${id} --no-edit --no-quote --body-file answer.txt`],
    })
      .option('--to <address>', 'add a recipient; repeat, or separate with commas', collect)
      .option('--cc <address>', 'add a copy recipient; repeat, or separate with commas', collect)
      .option('--bcc <address>', 'add a blind copy recipient; repeat, or separate with commas', collect)
      .option('--subject <text>', `the subject (default: the original's, after ${kind === 'forward' ? 'Fwd:' : 'Re:'})`)
      .option('--body <text>', 'your text, above the original; sends without the editor (unless -e)')
      .option('--body-file <path>', 'read your text from a file (- for standard input); as --body')
      .option('-e, --editor', 'open $VISUAL or $EDITOR even with --body (the options fill it in first)')
      .addOption(new Option('--no-edit', 'do not open the editor: send what the options and the original make').conflicts('editor'))
      .option('--no-quote', 'leave the original out')
      .option('--draft', 'save it as a draft instead of sending it')
      // Loaded only when an answer is written: the other commands start without it.
      .action(run<AnswerOptions>(async (ctx, [message = ''], options) => (await import('./reply.js')).answer(ctx, kind, message, options)));
  }
}

/** Run an action on one message and say what became of it. */
async function act(ctx: Context, action: (api: ApiClient) => Promise<{ message_id: string }>, done: string): Promise<void> {
  const answer = await action(ctx.api());
  ctx.show(answer, () => [`${answer.message_id} ${done}`]);
}

export function registerMessageCommands(program: Command): void {
  const messages = group(program, 'messages', 'read, move, label and download mail', [
    'mailroom messages --mailbox helpdesk@mailroom.localhost --unread',
    'mailroom messages show msg_01m7yfetj82xfwa7143xbzbx1z',
  ]);

  withPaging(
    leaf(messages, {
      name: 'list',
      isDefault: true,
      description: 'messages of the active workspace, newest first (* marks unread)',
      examples: ['mailroom messages list --mailbox helpdesk@mailroom.localhost --folder inbox --unread', 'mailroom messages list --label billing --limit 20 --json'],
    })
      .option('--mailbox <address>', 'only this mailbox')
      .option('--folder <folder>', 'only this folder: inbox, archive, sent, spam, trash')
      .option('--label <label>', 'only messages with this label')
      .option('--thread <thread_id>', 'only this thread')
      .addOption(new Option('--unread', 'only unread messages').conflicts('read'))
      .addOption(new Option('--read', 'only read messages')),
  ).action(run<ListOptions>((ctx, _args, options) => list(ctx, options)));

  withPaging(
    leaf(messages, {
      name: 'search <query...>',
      description: 'messages that match a search query (Gmail\'s operators: from:, to:, subject:, has:attachment, in:, is:unread, label:, before:, after:, -, OR), newest first',
      examples: ['mailroom messages search from:alice invoice', `mailroom messages search '"quarterly report" has:attachment -in:trash' --json`],
    })
      .option('--mailbox <address>', 'only this mailbox')
      .option('--folder <folder>', 'only this folder: inbox, archive, sent, spam, trash')
      .option('--label <label>', 'only messages with this label')
      .addOption(new Option('--unread', 'only unread messages').conflicts('read'))
      .addOption(new Option('--read', 'only read messages'))
      // `-in:spam` is a negated term of the query, not an option; a mistyped `--option` is still refused (search()).
      .allowUnknownOption(),
  ).action(run<ListOptions>((ctx, [query], options) => search(ctx, query!, options)));

  leaf(messages, {
    name: 'show <message_id>',
    description: 'one message: its fields, attachments and text body',
    examples: ['mailroom messages show msg_01m7yfetj82xfwa7143xbzbx1z --mark-read', 'mailroom messages show msg_01m7yfetj82xfwa7143xbzbx1z --headers --html'],
  })
    .option('--mark-read', 'mark it read')
    .option('--html', 'print the HTML body (as sent: not rendered, not sanitised) instead of the text')
    .option('--headers', 'print its header fields too')
    .action(
      run<{ markRead?: boolean; html?: boolean; headers?: boolean }>(async (ctx, [id = ''], options) => {
        const message = await ctx.api().get('/app/api/messages/{message_id}', { path: { message_id: id }, query: options.markRead ? { mark_read: true } : {} });
        ctx.show(message, () => messageView(message, ctx.style, options));
      }),
    );

  registerAnswers(messages);

  leaf(messages, { name: 'read <message_id>', description: 'mark a message read', examples: ['mailroom messages read msg_01m7yfetj82xfwa7143xbzbx1z'] }).action(
    run((ctx, [id = '']) => act(ctx, (api) => api.post('/app/api/messages/{message_id}/read', { path: { message_id: id }, body: { read: true } }), 'marked read')),
  );
  leaf(messages, { name: 'unread <message_id>', description: 'mark a message unread', examples: ['mailroom messages unread msg_01m7yfetj82xfwa7143xbzbx1z'] }).action(
    run((ctx, [id = '']) => act(ctx, (api) => api.post('/app/api/messages/{message_id}/read', { path: { message_id: id }, body: { read: false } }), 'marked unread')),
  );
  leaf(messages, {
    name: 'move <message_id> <folder>',
    description: 'move a message to inbox, archive, sent, spam or trash',
    examples: ['mailroom messages move msg_01m7yfetj82xfwa7143xbzbx1z archive'],
  }).action(run((ctx, [id = '', folder = '']) => act(ctx, (api) => api.post('/app/api/messages/{message_id}/move', { path: { message_id: id }, body: { folder: given<Folder>(folder) } }), `moved to ${folder}`)));
  leaf(messages, { name: 'spam <message_id>', description: 'move a message to spam', examples: ['mailroom messages spam msg_01m7yfetj82xfwa7143xbzbx1z'] }).action(
    run((ctx, [id = '']) => act(ctx, (api) => api.post('/app/api/messages/{message_id}/spam', { path: { message_id: id } }), 'moved to spam')),
  );
  leaf(messages, { name: 'not-spam <message_id>', description: 'move a message back to inbox', examples: ['mailroom messages not-spam msg_01m7yfetj82xfwa7143xbzbx1z'] }).action(
    run((ctx, [id = '']) => act(ctx, (api) => api.post('/app/api/messages/{message_id}/not-spam', { path: { message_id: id } }), 'moved to inbox')),
  );

  leaf(messages, {
    name: 'cancel <message_id>',
    description: 'cancel a scheduled message (sent with --at): it never leaves; the copy stays in sent as cancelled',
    examples: ['mailroom messages cancel msg_01m7yfetj82xfwa7143xbzbx1z'],
  }).action(
    run(async (ctx, [id = '']) => {
      const message = await ctx.api().post('/app/api/messages/{message_id}/cancel', { path: { message_id: id } });
      ctx.show(message, () => [`${message.message_id} is ${message.status}`]);
    }),
  );
  leaf(messages, {
    name: 'reschedule <message_id>',
    description: 'send a scheduled message at another time (up to 30 days ahead; a time already past sends it now)',
    examples: ['mailroom messages reschedule msg_01m7yfetj82xfwa7143xbzbx1z --at 2026-12-02T09:00:00Z', 'mailroom messages reschedule msg_01m7yfetj82xfwa7143xbzbx1z --at "2026-12-02 09:00"'],
  })
    .requiredOption('--at <time>', 'the new time: ISO 8601 (without an offset: local time)', sendAt)
    .action(
      run<{ at: string }>(async (ctx, [id = ''], options) => {
        const message = await ctx.api().post('/app/api/messages/{message_id}/reschedule', { path: { message_id: id }, body: { send_at: options.at } });
        ctx.show(message, () => [`${message.message_id} is ${message.status}, for ${message.send_at ?? options.at}`]);
      }),
    );

  leaf(messages, {
    name: 'delete <message_id>',
    description: 'delete a message for good (there is no undo)',
    examples: ['mailroom messages delete msg_01m7yfetj82xfwa7143xbzbx1z --yes'],
  })
    .option('--yes', 'confirm: the message, its text and its attachments are gone for good')
    .action(
      run<{ yes?: boolean }>(async (ctx, [id = ''], options) => {
        if (!options.yes) throw new CliError(`deleting ${id} cannot be undone; pass --yes to go ahead (or move it to trash)`);
        const answer = await ctx.api().delete('/app/api/messages/{message_id}', { path: { message_id: id } });
        ctx.show(answer, () => [`${answer.message_id} deleted`]);
      }),
    );

  leaf(messages, {
    name: 'label <message_id>',
    description: 'add and remove labels (1–64 characters of a-z 0-9 _ . : -)',
    examples: ['mailroom messages label msg_01m7yfetj82xfwa7143xbzbx1z --add billing --add vip', 'mailroom messages label msg_01m7yfetj82xfwa7143xbzbx1z --add urgent --remove vip'],
  })
    .option('--add <label>', 'a label to add (repeat, or separate with commas)', collect)
    .option('--remove <label>', 'a label to remove (repeat, or separate with commas)', collect)
    .action(
      run<{ add?: string[]; remove?: string[] }>(async (ctx, [id = ''], options) => {
        if (!options.add && !options.remove) throw new CliError('give --add or --remove (or both)');
        const answer = await ctx.api().post('/app/api/messages/{message_id}/labels', { path: { message_id: id }, body: { add: options.add, remove: options.remove } });
        ctx.show(answer, () => [`labels of ${id}: ${answer.labels.length > 0 ? answer.labels.join(', ') : '(none)'}`]);
      }),
    );

  leaf(messages, { name: 'thread <message_id>', description: "the message's thread, oldest message first", examples: ['mailroom messages thread msg_01m7yfetj82xfwa7143xbzbx1z'] }).action(
    run(async (ctx, [id = '']) => {
      const thread = await ctx.api().get('/app/api/messages/{message_id}/thread', { path: { message_id: id } });
      ctx.show(thread, () => threadView(thread, ctx.style));
    }),
  );

  leaf(messages, { name: 'attachments <message_id>', description: "the message's attachments", examples: ['mailroom messages attachments msg_01m7yfetj82xfwa7143xbzbx1z'] }).action(
    run(async (ctx, [id = '']) => {
      const answer = await ctx.api().get('/app/api/messages/{message_id}/attachments', { path: { message_id: id } });
      ctx.show(answer, () => (answer.attachments.length > 0 ? attachmentTable(answer.attachments, ctx.style) : ['no attachments']));
    }),
  );

  leaf(messages, {
    name: 'download <message_id> <attachment_id>',
    description: "save an attachment, by default under its own name in this directory",
    examples: [
      'mailroom messages download msg_01m7yfetj82xfwa7143xbzbx1z att_01m7yfetj82xfwa7143xbzbx20',
      'mailroom messages download msg_01m7yfetj82xfwa7143xbzbx1z att_01m7yfetj82xfwa7143xbzbx20 -o ~/Downloads/',
      'mailroom messages download msg_01m7yfetj82xfwa7143xbzbx1z att_01m7yfetj82xfwa7143xbzbx20 -o - | less',
    ],
  })
    .option('-o, --output <path>', 'a file, a directory, or - for standard output')
    .option('--force', 'replace the file if it exists')
    .action(
      run<{ output?: string; force?: boolean }>(async (ctx, [id = '', attachmentId = ''], options) => {
        const download = await ctx.api().download('/app/api/messages/{message_id}/attachments/{attachment_id}', { path: { message_id: id, attachment_id: attachmentId } });
        const saved = await saveDownload(download, { ...options, fallbackName: attachmentId });
        if (saved.path === null) return;
        ctx.show({ ok: true, ...saved }, () => [`saved ${saved.path} (${formatBytes(saved.bytes)}, ${saved.content_type})`]);
      }),
    );

  leaf(messages, {
    name: 'raw <message_id>',
    description: 'the message source as stored (RFC 5322), on standard output or into a file',
    examples: ['mailroom messages raw msg_01m7yfetj82xfwa7143xbzbx1z | less', 'mailroom messages raw msg_01m7yfetj82xfwa7143xbzbx1z -o order.eml'],
  })
    .option('-o, --output <path>', 'a file or a directory instead of standard output')
    .option('--force', 'replace the file if it exists')
    .action(
      run<{ output?: string; force?: boolean }>(async (ctx, [id = ''], options) => {
        const download = await ctx.api().download('/app/api/messages/{message_id}/raw', { path: { message_id: id } });
        const saved = await saveDownload(download, { output: options.output ?? '-', force: options.force, fallbackName: `${id}.eml` });
        if (saved.path === null) return;
        ctx.show({ ok: true, ...saved }, () => [`saved ${saved.path} (${formatBytes(saved.bytes)})`]);
      }),
    );
}

import type { Command } from 'commander';
import type { Schema } from './api.types.js';
import { readAttachments } from './attachments.js';
import { composedContent, draftTemplate, isEmptyDraft, parseDraftText, withComposeOptions, type ComposeOptions, type EditableDraft } from './compose.js';
import { suppressedNote } from './suppressions.commands.js';
import { group, leaf, run, type Context } from './context.js';
import { CliError } from './errors.js';
import { pageFooter, relativeTime, renderFields, renderTable, safeText } from './format.js';
import { sendAt, withPaging, type PageOptions } from './options.js';
import { editText } from './prompt.js';
import { queuedLine } from './views.js';

type Draft = Schema<'Draft'>;
const path = (id: string) => ({ path: { draft_id: id } });

function draftView(d: Draft, ctx: Context): string[] {
  return [
    ...renderFields(
      [
        ['Draft', d.draft_id],
        ['From', d.mailbox],
        ['To', d.to.join(', ') || '-'],
        ['Cc', d.cc.length > 0 ? d.cc.join(', ') : null],
        ['Bcc', d.bcc.length > 0 ? d.bcc.join(', ') : null],
        ['Subject', d.subject || '(no subject)'],
        ['In reply to', d.in_reply_to],
        ['HTML', d.html !== null ? `yes (${d.html.length} characters)` : null],
        ['Attachments', d.attachments.length > 0 ? d.attachments.map((a) => `${a.filename} (${a.size} bytes${a.inline ? ', inline' : ''}) ${a.attachment_id}`).join('\n') : null],
        ['Updated', relativeTime(d.updated_at)],
      ],
      ctx.style,
    ),
    '',
    safeText(d.body) || ctx.style.dim('(no body)'),
  ];
}

interface DraftOptions extends ComposeOptions {
  mailbox?: string;
  inReplyTo?: string;
  /** false with --no-html: remove the HTML alternative. */
  html?: boolean;
  editor?: boolean;
}

type DraftChanges = Partial<Pick<Draft, 'mailbox' | 'to' | 'cc' | 'bcc' | 'subject' | 'body' | 'html' | 'in_reply_to'>>;

/** The fields the options change, in the API's names; the others are left out. */
async function changesFrom(options: DraftOptions): Promise<DraftChanges> {
  const content = await composedContent(options);
  const changes: DraftChanges = {
    mailbox: options.mailbox,
    to: options.to,
    cc: options.cc,
    bcc: options.bcc,
    subject: options.subject,
    body: content.body,
    html: options.html === false ? null : content.html,
    in_reply_to: options.inReplyTo,
  };
  return Object.fromEntries(Object.entries(changes).filter(([, value]) => value !== undefined));
}

/** Open the editor on these fields and give them back as edited. */
function editDraft(fields: DraftChanges, mailbox: string): EditableDraft {
  const start = { to: fields.to ?? [], cc: fields.cc ?? [], bcc: fields.bcc ?? [], subject: fields.subject ?? '', body: fields.body ?? '' };
  return parseDraftText(editText(draftTemplate(start, mailbox)));
}

export function registerDraftCommands(program: Command): void {
  const drafts = group(program, 'drafts', 'write, change and send drafts', [
    'mailroom drafts create --mailbox helpdesk@mailroom.localhost --editor',
    'mailroom drafts send drf_01m7yhqc9wcgbyps3d2mttenjj',
  ]);

  withPaging(
    leaf(drafts, { name: 'list', isDefault: true, description: 'drafts of the active workspace, newest first', examples: ['mailroom drafts list --mailbox helpdesk@mailroom.localhost'] }).option(
      '--mailbox <address>',
      'only drafts sent from this mailbox',
    ),
  ).action(
    run<PageOptions & { mailbox?: string }>(async (ctx, _args, options) => {
      const page = await ctx.api().get('/app/api/drafts', { query: { mailbox: options.mailbox, limit: options.limit, offset: options.offset } });
      ctx.show(page, () => [
        ...(page.drafts.length > 0
          ? renderTable(
              page.drafts,
              [
                { header: 'ID', value: (d) => d.draft_id },
                { header: 'FROM', value: (d) => d.mailbox, max: 30 },
                { header: 'TO', value: (d) => d.to.join(', ') || '-', max: 30 },
                { header: 'SUBJECT', value: (d) => d.subject || '(no subject)', max: 50 },
                { header: 'UPDATED', value: (d) => relativeTime(d.updated_at), style: (t) => ctx.style.dim(t) },
              ],
              ctx.style,
            )
          : []),
        ctx.style.dim(pageFooter(page, page.drafts.length, ['draft', 'drafts'])),
      ]);
    }),
  );

  leaf(drafts, { name: 'show <draft_id>', description: 'one draft with its body', examples: ['mailroom drafts show drf_01m7yhqc9wcgbyps3d2mttenjj'] }).action(
    run(async (ctx, [id = '']) => {
      const draft = await ctx.api().get('/app/api/drafts/{draft_id}', path(id));
      ctx.show(draft, () => draftView(draft, ctx));
    }),
  );

  withComposeOptions(
    leaf(drafts, {
      name: 'create',
      description: 'write a draft from options, or in $EDITOR with --editor',
      examples: [
        'mailroom drafts create --mailbox helpdesk@mailroom.localhost --to customer@example.com --subject "Your order" --body "It ships today."',
        'mailroom drafts create --mailbox helpdesk@mailroom.localhost --in-reply-to msg_01m7yhqc9mjfqk5df8n7sq7rv5 --editor',
      ],
    }).requiredOption('--mailbox <address>', 'the mailbox it will be sent from'),
    { required: false },
  )
    .option('--in-reply-to <message_id>', 'the message it answers (the reply joins its thread)')
    .option('-e, --editor', 'write it in $VISUAL or $EDITOR; the other options fill it in first')
    .action(
      run<DraftOptions & { mailbox: string }>(async (ctx, _args, options) => {
        const api = ctx.api();
        let changes = await changesFrom(options);
        if (options.editor) {
          const edited = editDraft(changes, options.mailbox);
          if (isEmptyDraft(edited)) throw new CliError('the draft is empty; nothing was saved');
          changes = { ...changes, ...edited };
        }
        const draft = await api.post('/app/api/drafts', { body: { ...changes, mailbox: options.mailbox } });
        ctx.show(draft, () => [`created ${draft.draft_id}`, ...draftView(draft, ctx)]);
      }),
    );

  withComposeOptions(
    leaf(drafts, {
      name: 'edit <draft_id>',
      description: 'change the fields given as options; without any, edit the draft in $EDITOR',
      examples: ['mailroom drafts edit drf_01m7yhqc9wcgbyps3d2mttenjj', 'mailroom drafts edit drf_01m7yhqc9wcgbyps3d2mttenjj --cc billing@example.com --html-file reply.html'],
    }).option('--mailbox <address>', 'send it from another mailbox'),
    { required: false },
  )
    .option('--no-html', 'remove the HTML alternative')
    .option('--in-reply-to <message_id>', 'the message it answers')
    .option('-e, --editor', 'edit it in $VISUAL or $EDITOR even when options are given (they apply first)')
    .action(
      run<DraftOptions>(async (ctx, [id = ''], options) => {
        const api = ctx.api();
        const changes = await changesFrom(options);
        if (Object.keys(changes).length === 0 || options.editor) {
          const current = await api.get('/app/api/drafts/{draft_id}', path(id));
          Object.assign(changes, editDraft({ ...current, ...changes }, changes.mailbox ?? current.mailbox));
          // Send only what differs from the draft as it is.
          for (const key of Object.keys(changes) as (keyof DraftChanges)[]) {
            if (JSON.stringify(changes[key]) === JSON.stringify(current[key])) delete changes[key];
          }
          if (Object.keys(changes).length === 0) {
            ctx.show(current, () => [`no changes to ${id}`]);
            return;
          }
        }
        const draft = await api.patch('/app/api/drafts/{draft_id}', { ...path(id), body: changes });
        ctx.show(draft, () => [`updated ${draft.draft_id}`, ...draftView(draft, ctx)]);
      }),
    );

  leaf(drafts, {
    name: 'send <draft_id>',
    description: 'send a draft: it is queued for delivery (or scheduled, with --at), a copy goes to sent, and the draft is deleted',
    examples: ['mailroom drafts send drf_01m7yhqc9wcgbyps3d2mttenjj', 'mailroom drafts send drf_01m7yhqc9wcgbyps3d2mttenjj --at 2026-12-01T09:00:00Z'],
  })
    .option('--at <time>', 'send it later: an ISO 8601 time up to 30 days ahead (without an offset: local time)', sendAt)
    .action(
      run<{ at?: string }>(async (ctx, [id = ''], options) => {
        const body = options.at === undefined ? {} : { body: { send_at: options.at } };
        const queued = await ctx.api().post('/app/api/drafts/{draft_id}/send', { ...path(id), ...body });
        ctx.show(queued, () => [`sent ${id}: ${queuedLine(queued)}`, ...suppressedNote(queued)]);
      }),
    );

  leaf(drafts, {
    name: 'attach <draft_id> <file>',
    description: 'attach a file to a draft (uploaded as multipart/form-data; 25 MiB per draft in all); its type comes from its extension',
    examples: ['mailroom drafts attach drf_01m7yhqc9wcgbyps3d2mttenjj invoice.pdf', 'mailroom drafts attach drf_01m7yhqc9wcgbyps3d2mttenjj logo.png --inline logo'],
  })
    .option('--inline <content_id>', 'make it an inline part, which the HTML shows as <img src="cid:content_id">')
    .action(
      run<{ inline?: string }>(async (ctx, [id = '', file = ''], options) => {
        const draft = await ctx.api().upload('/app/api/drafts/{draft_id}/attachments', { draft_id: id }, await readAttachments([file]), options.inline);
        ctx.show(draft, () => [`attached ${file} to ${id}`, ...draftView(draft, ctx)]);
      }),
    );

  leaf(drafts, {
    name: 'detach <draft_id> <attachment_id>',
    description: 'remove a file from a draft',
    examples: ['mailroom drafts detach drf_01m7yhqc9wcgbyps3d2mttenjj att_01m7yhqc9wcgbyps3d2mttenjk'],
  }).action(
    run(async (ctx, [id = '', attachmentId = '']) => {
      const draft = await ctx.api().delete('/app/api/drafts/{draft_id}/attachments/{attachment_id}', { path: { draft_id: id, attachment_id: attachmentId } });
      ctx.show(draft, () => [`removed ${attachmentId} from ${id}`, ...draftView(draft, ctx)]);
    }),
  );

  leaf(drafts, { name: 'delete <draft_id>', description: 'delete a draft', examples: ['mailroom drafts delete drf_01m7yhqc9wcgbyps3d2mttenjj'] }).action(
    run(async (ctx, [id = '']) => {
      const answer = await ctx.api().delete('/app/api/drafts/{draft_id}', path(id));
      ctx.show(answer, () => [`deleted ${id}`]);
    }),
  );
}

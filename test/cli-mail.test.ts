import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliUser, listen, type CliUser } from './helpers/cli-client.js';
import { TEST_DIALECT } from './helpers/database.js';
import { createTenant, type Tenant } from './helpers/harness.js';
import { startMailHarness, type MailHarness } from './helpers/mail.js';

const SUPPORT = 'helpdesk@mailroom.localhost';
const PDF = Buffer.from('%PDF-1.4 fake receipt\n');

interface Message {
  message_id: string;
  subject: string;
  read: boolean;
  folder: string;
  labels: string[];
  thread_id: string;
  attachments: { attachment_id: string; filename: string }[];
}
interface MessagePage {
  messages: Message[];
  total: number;
}
interface Draft {
  draft_id: string;
  to: string[];
  cc: string[];
  subject: string;
  body: string;
}

/**
 * The cells of an aligned table (its header line and rows), cut where the header's columns start. Fails
 * when a cell runs into the gap before the next column, so it checks the alignment as well.
 */
function cells(lines: readonly string[], headers: readonly string[]): string[][] {
  const [header = '', ...rows] = lines;
  const starts: number[] = [];
  for (const name of headers) starts.push(header.indexOf(name, (starts.at(-1) ?? -1) + 1));
  expect(starts.every((start) => start >= 0), `headers ${headers.join(', ')} in ${JSON.stringify(header)}`).toBe(true);
  return rows.map((row) => {
    for (const start of starts.slice(1)) expect(row[start - 1] ?? ' ', `${JSON.stringify(row)} is aligned`).toBe(' ');
    return starts.map((start, i) => row.slice(start, starts[i + 1]).trim());
  });
}

/** The line of `output` that contains `needle`. */
const lineWith = (output: string, needle: string): string => output.split('\n').find((line) => line.includes(needle)) ?? `(no line with ${needle})`;

describe(`mailroom CLI client: mail, drafts, lists and domains (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let url: string;
  let acme: Tenant;
  let owner: CliUser;
  let member: CliUser;
  let order: string;
  let reply: string;
  let hostile: string;
  let attachment: string;
  let thread: string;
  const work = mkdtempSync(join(tmpdir(), 'mailroom-cli-work-'));

  /** Deliver over real SMTP; the id is in the server's final reply. */
  const deliver = async (mail: Parameters<MailHarness['send']>[0]): Promise<string> => {
    const info = await h.send({ from: 'Alice Example <alice@sender.test>', to: SUPPORT, ...mail });
    return /msg_[0-9a-z]{26}/.exec(info.response)?.[0] ?? '';
  };

  beforeAll(async () => {
    h = await startMailHarness();
    h.clock.set(Date.now());
    url = await listen(h.app);
    acme = await createTenant(h, 'Acme');
    owner = cliUser(url);
    expect((await owner.login(acme.ownerEmail, acme.password)).code).toBe(0);
    await h.services.tenancy.admin.createUser({ email: 'member@example.com', password: 'member-password' });
    await h.services.tenancy.admin.addMember({ workspace: acme.workspaceId, email: 'member@example.com', role: 'member' });
    member = cliUser(url);
    expect((await member.login('member@example.com', 'member-password')).code).toBe(0);
  });
  afterAll(async () => h.close());

  it('creates and lists mailboxes as an aligned table', async () => {
    const created = await owner.run(['mailboxes', 'create', 'Helpdesk@mailroom.localhost', '--description', 'Help desk']);
    expect(created.stderr).toBe('');
    expect(created.stdout).toBe(`created ${SUPPORT}\nDescription  Help desk\n`);
    expect((await member.run(['mailboxes', 'create', 'orders@mailroom.localhost'])).code).toBe(0);

    const list = await owner.run(['mailboxes']);
    expect(cells(list.stdout.trimEnd().split('\n'), ['ADDRESS', 'MESSAGES', 'UNREAD', 'DESCRIPTION', 'CREATED'])).toEqual([
      ['orders@mailroom.localhost', '0', '', '', 'just now'],
      [SUPPORT, '0', '', 'Help desk', 'just now'],
    ]);
    const json = await owner.json<{ mailboxes: { address: string }[] }>(['mailboxes', 'list']);
    expect(json.mailboxes.map((m) => m.address)).toEqual(['orders@mailroom.localhost', SUPPORT]);

    const taken = await member.run(['mailboxes', 'create', SUPPORT]);
    expect(taken.code).toBe(1);
    expect(taken.stderr).toBe(`error: 409 address_taken: the address ${SUPPORT} is already in use\n`);
    const foreign = await owner.run(['mailboxes', 'create', 'x@not-ours.example']);
    expect(foreign.code).toBe(1);
    expect(foreign.stderr).toMatch(/^error: 400 domain_not_allowed: .+\n$/);
  });

  it('lists messages with filters, reads, moves, labels and deletes them', async () => {
    order = await deliver({
      subject: 'Order 1234 has not arrived',
      text: 'Hello, my order 1234 has not arrived yet.',
      messageId: '<order-1234@sender.test>',
      attachments: [{ filename: '../../receipt.pdf', content: PDF, contentType: 'application/pdf' }],
    });
    reply = await deliver({ subject: 'Re: Order 1234 has not arrived', text: 'Any news?', inReplyTo: '<order-1234@sender.test>', references: '<order-1234@sender.test>' });
    hostile = await deliver({ from: 'mallory@evil.test', subject: 'Invoice \u001b[2J\u001b[31mURGENT\u202e', text: 'pay now \u001b]0;owned\u0007 please' });

    const list = await owner.run(['messages']);
    expect(list.code).toBe(0);
    const lines = list.stdout.trimEnd().split('\n');
    expect(lines[4]).toBe('3 messages');
    const rows = cells(lines.slice(0, 4), [' ', 'ID', 'FROM', 'SUBJECT', 'FOLDER', 'LABELS', 'RECEIVED']);
    expect(rows.map((r) => r.slice(0, 6))).toEqual([
      ['*', hostile, 'mallory@evil.test', 'Invoice \ufffd[2J\ufffd[31mURGENT\ufffd', 'inbox', ''],
      ['*', reply, 'Alice Example', 'Re: Order 1234 has not arrived', 'inbox', ''],
      ['*', order, 'Alice Example', 'Order 1234 has not arrived', 'inbox', ''],
    ]);
    // What a sender wrote cannot drive the terminal: escapes and bidi overrides are shown as U+FFFD.
    for (const char of ['\u001b', '\u202e']) expect(list.stdout).not.toContain(char);

    // Search: the words of the query may come as one argument or several; a table like `messages`, or the page as JSON.
    const found = await owner.run(['messages', 'search', 'order', '-subject:re']);
    expect(found.code, found.stderr).toBe(0);
    const foundLines = found.stdout.trimEnd().split('\n');
    expect(foundLines.at(-1)).toBe('1 message');
    expect(cells(foundLines.slice(0, 2), [' ', 'ID', 'FROM', 'SUBJECT', 'FOLDER', 'LABELS', 'RECEIVED'])[0]!.slice(1, 4)).toEqual([order, 'Alice Example', 'Order 1234 has not arrived']);
    expect((await owner.json<MessagePage>(['messages', 'search', 'from:alice has:attachment'])).messages.map((m) => m.message_id)).toEqual([order]);
    expect((await owner.json<MessagePage>(['messages', 'search', 'invoice', '--mailbox', SUPPORT])).messages.map((m) => m.message_id)).toEqual([hostile]);
    const malformed = await owner.run(['messages', 'search', 'from:']);
    expect(malformed.code).toBe(1);
    expect(malformed.stderr).toContain("'from:' needs a value at position 0");
    const mistyped = await owner.run(['messages', 'search', 'order', '--mailbx', SUPPORT]);
    expect(mistyped.code).toBe(1);
    expect(mistyped.stderr).toContain("unknown option '--mailbx'");

    expect((await owner.run(['messages', 'read', order])).stdout).toBe(`${order} marked read\n`);
    expect((await owner.json<MessagePage>(['messages', '--unread'])).messages.map((m) => m.message_id)).toEqual([hostile, reply]);
    expect((await owner.json<MessagePage>(['messages', 'list', '--read', '--mailbox', SUPPORT])).messages.map((m) => m.message_id)).toEqual([order]);
    expect((await owner.run(['messages', 'unread', order])).stdout).toBe(`${order} marked unread\n`);
    expect((await owner.json<MessagePage>(['messages', '--unread'])).total).toBe(3);
    const both = await owner.run(['messages', '--read', '--unread']);
    expect(both.code).toBe(1);
    expect(both.stderr).toContain("option '--unread' cannot be used with option '--read'");

    expect((await owner.run(['messages', 'move', hostile, 'archive'])).stdout).toBe(`${hostile} moved to archive\n`);
    expect((await owner.json<MessagePage>(['messages', '--folder', 'archive'])).messages.map((m) => m.message_id)).toEqual([hostile]);
    const junk = await owner.run(['messages', 'move', hostile, 'junk']);
    expect(junk.code).toBe(1);
    expect(junk.stderr).toBe('error: 400 invalid_folder: folder must be one of inbox, archive, sent, spam, trash\n');
    expect((await owner.run(['messages', 'spam', hostile])).stdout).toBe(`${hostile} moved to spam\n`);
    expect((await owner.run(['messages', 'not-spam', hostile])).stdout).toBe(`${hostile} moved to inbox\n`);

    expect((await owner.run(['messages', 'label', order, '--add', 'billing,vip'])).stdout).toBe(`labels of ${order}: billing, vip\n`);
    expect((await owner.run(['messages', 'label', order, '--remove', 'vip'])).stdout).toBe(`labels of ${order}: billing\n`);
    expect((await owner.json<MessagePage>(['messages', '--label', 'billing'])).messages.map((m) => m.message_id)).toEqual([order]);
    expect((await owner.run(['messages', 'label', order])).stderr).toBe('error: give --add or --remove (or both)\n');
    const badLabel = await owner.run(['messages', 'label', order, '--add', 'Not A Label']);
    expect(badLabel.code).toBe(1);
    expect(badLabel.stderr).toMatch(/^error: 400 invalid_request: body\.add\/0 must match pattern|^error: 400 invalid_request: body\.add\.0 must match pattern/);

    const noYes = await owner.run(['messages', 'delete', hostile]);
    expect(noYes.code).toBe(1);
    expect(noYes.stderr).toBe(`error: deleting ${hostile} cannot be undone; pass --yes to go ahead (or move it to trash)\n`);
    const shown = await owner.run(['messages', 'show', hostile]);
    for (const char of ['\u0007', '\u001b', '\u202e']) expect(shown.stdout).not.toContain(char);
    expect(shown.stdout).toContain('pay now \ufffd]0;owned\ufffd please');
    expect((await owner.run(['messages', 'delete', hostile, '--yes'])).stdout).toBe(`${hostile} deleted\n`);
    const gone = await owner.run(['messages', 'show', hostile]);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toBe(`error: 404 message_not_found: no message ${hostile}\n`);
  });

  it('shows a message with its fields, attachments and body, and its thread', async () => {
    const shown = await owner.run(['messages', 'show', order]);
    expect(shown.code).toBe(0);
    const out = shown.stdout;
    expect(out).toMatch(new RegExp(`^Message +${order}\nMailbox +${SUPPORT}\nFolder +inbox \\(unread\\)\nFrom +Alice Example <alice@sender\\.test>\nTo +${SUPPORT}\n`));
    expect(lineWith(out, 'Subject')).toMatch(/^Subject +Order 1234 has not arrived$/);
    expect(lineWith(out, 'Labels')).toMatch(/^Labels +billing$/);
    expect(lineWith(out, 'Auth')).toMatch(/^Auth +spf=\S+ dkim=\S+ dmarc=\S+$/);
    expect(out).toContain('\nAttachments\n  ID ');
    const attachments = out.slice(out.indexOf('\nAttachments\n') + 13).split('\n').slice(0, 2).map((l) => l.slice(2));
    expect(cells(attachments, ['ID', 'NAME', 'TYPE', 'SIZE', 'INLINE'])).toEqual([[expect.stringMatching(/^att_/), '../../receipt.pdf', 'application/pdf', '22 B', '']]);
    expect(out.endsWith('\n\nHello, my order 1234 has not arrived yet.\n')).toBe(true);

    const json = await owner.json<Message>(['messages', 'show', order, '--mark-read']);
    expect(json.read).toBe(true);
    attachment = json.attachments[0]?.attachment_id ?? '';
    thread = json.thread_id;
    const headers = await owner.run(['messages', 'show', order, '--headers']);
    expect(headers.stdout).toContain('\nHeader fields\n');
    expect(headers.stdout).toContain('  Message-ID: <order-1234@sender.test>\n');

    const threadView = await owner.run(['messages', 'thread', reply]);
    expect(threadView.stdout).toMatch(new RegExp(`^Thread +${thread}\nMailbox +${SUPPORT}\nSubject +Order 1234 has not arrived\nMessages +2 \\(1 unread\\)\n`));
    expect(threadView.stdout.indexOf(order)).toBeLessThan(threadView.stdout.indexOf(reply));
  });

  it('downloads attachments to a file under a safe name, and the raw source', async () => {
    const listed = await owner.run(['messages', 'attachments', order]);
    expect(cells(listed.stdout.trimEnd().split('\n'), ['ID', 'NAME', 'TYPE', 'SIZE', 'INLINE'])).toEqual([[attachment, '../../receipt.pdf', 'application/pdf', '22 B', '']]);

    const dir = mkdtempSync(join(work, 'dl-'));
    const saved = await owner.run(['messages', 'download', order, attachment, '-o', dir]);
    expect(saved.stderr).toBe('');
    // The name came from the sender as ../../receipt.pdf: only its last part is used.
    expect(saved.stdout).toBe(`saved ${join(dir, 'receipt.pdf')} (22 B, application/pdf)\n`);
    expect(readFileSync(join(dir, 'receipt.pdf'))).toEqual(PDF);
    const again = await owner.run(['messages', 'download', order, attachment, '-o', dir]);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe(`error: ${join(dir, 'receipt.pdf')} already exists; pass --force to replace it or --output to choose another name\n`);
    writeFileSync(join(dir, 'receipt.pdf'), 'old');
    const forced = await owner.json<{ ok: boolean; path: string; bytes: number; content_type: string }>(['messages', 'download', order, attachment, '-o', dir, '--force']);
    expect(forced).toEqual({ ok: true, path: join(dir, 'receipt.pdf'), bytes: PDF.length, content_type: 'application/pdf' });
    expect(readFileSync(join(dir, 'receipt.pdf'))).toEqual(PDF);

    const here = mkdtempSync(join(work, 'cwd-'));
    const inCwd = await owner.run(['messages', 'download', order, attachment], { cwd: here });
    expect(inCwd.stdout).toBe('saved receipt.pdf (22 B, application/pdf)\n');
    expect(readFileSync(join(here, 'receipt.pdf'))).toEqual(PDF);
    const named = await owner.run(['messages', 'download', order, attachment, '--output', join(here, 'copy.bin')]);
    expect(named.code).toBe(0);
    expect(readFileSync(join(here, 'copy.bin'))).toEqual(PDF);
    const toStdout = await owner.run(['messages', 'download', order, attachment, '-o', '-']);
    expect(toStdout.stdout).toBe(PDF.toString());

    const missing = await owner.run(['messages', 'download', order, 'att_nope', '-o', here]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe(`error: 404 attachment_not_found: no attachment att_nope on message ${order}\n`);
    expect(existsSync(join(here, 'att_nope'))).toBe(false);

    const raw = await owner.run(['messages', 'raw', order]);
    expect(raw.stdout).toContain('Subject: Order 1234 has not arrived');
    expect((await owner.run(['messages', 'raw', order, '-o', here])).stdout).toMatch(new RegExp(`^saved ${join(here, `${order}.eml`)} \\(\\d+(\\.\\d)? (B|KiB)\\)\n$`));
  });

  it('lists, shows and labels threads', async () => {
    const list = await owner.run(['threads']);
    const threads = cells(list.stdout.trimEnd().split('\n').slice(0, -1), ['ID', 'SUBJECT', 'MESSAGES', 'UNREAD', 'LABELS', 'LAST MESSAGE']);
    expect(threads.map((r) => r.slice(0, 5))).toEqual([[thread, 'Order 1234 has not arrived', '2', '1', 'billing']]);
    expect((await owner.run(['threads', 'label', thread, '--add', 'order-1234'])).stdout).toBe(`labels of ${thread}: billing, order-1234\n`);
    expect((await owner.json<{ threads: { thread_id: string }[] }>(['threads', '--label', 'order-1234'])).threads.map((t) => t.thread_id)).toEqual([thread]);
    const shown = await owner.run(['threads', 'show', thread]);
    expect(lineWith(shown.stdout, 'Labels')).toMatch(/^Labels +billing, order-1234$/);
    expect(shown.stdout).toContain(reply);
    expect((await owner.run(['threads', 'show', 'thr_nope'])).stderr).toBe('error: 404 thread_not_found: no thread thr_nope\n');
  });

  it('writes drafts from options and in $EDITOR, edits and sends them', async () => {
    const fromFlags = await owner.run(['drafts', 'create', '--mailbox', SUPPORT, '--to', 'Customer@Example.com', '--subject', 'Your order', '--body', 'It ships today.', '--in-reply-to', order]);
    expect(fromFlags.stderr).toBe('');
    const flagsId = /^created (drf_[0-9a-z]{26})\n/.exec(fromFlags.stdout)?.[1] ?? '';
    expect(fromFlags.stdout).toMatch(new RegExp(`^created ${flagsId}\nDraft +${flagsId}\nFrom +${SUPPORT}\nTo +customer@example\\.com\nSubject +Your order\nIn reply to +${order}\nUpdated +just now\n\nIt ships today\\.\n$`));

    const seen = join(work, 'editor-saw.txt');
    const writer = join(work, 'write-draft.sh');
    writeFileSync(
      writer,
      `#!/bin/sh\ncp "$1" "${seen}"\ncat > "$1" <<'EOF'\nTo: a@example.com, B@Example.org\nCc: c@example.com\nSubject: Written in the editor\n# a comment that is dropped\n\nDear customer,\n\nit ships today.\n\nEOF\n`,
    );
    chmodSync(writer, 0o755);
    const edited = await owner.json<Draft>(['drafts', 'create', '--mailbox', SUPPORT, '--to', 'prefilled@example.com', '--editor'], { env: { EDITOR: writer } });
    expect(readFileSync(seen, 'utf8')).toBe(
      'To: prefilled@example.com\nCc: \nBcc: \nSubject: \n' +
        `# From ${SUPPORT}. Write the body below the empty line. Lines starting with # above it\n` +
        '# are ignored. Separate addresses with commas. An empty file saves nothing.\n\n',
    );
    expect(edited).toMatchObject({ to: ['a@example.com', 'b@example.org'], cc: ['c@example.com'], subject: 'Written in the editor', body: 'Dear customer,\n\nit ships today.' });

    const sed = join(work, 'change-subject.sh');
    writeFileSync(sed, `#!/bin/sh\ncp "$1" "${seen}"\nsed -i 's/^Subject: .*/Subject: Changed in the editor/' "$1"\n`);
    chmodSync(sed, 0o755);
    const changed = await owner.run(['drafts', 'edit', edited.draft_id], { env: { VISUAL: sed } });
    expect(changed.stdout).toMatch(new RegExp(`^updated ${edited.draft_id}\n`));
    expect(readFileSync(seen, 'utf8')).toMatch(/^To: a@example\.com, b@example\.org\nCc: c@example\.com\nBcc: \nSubject: Written in the editor\n#[^\n]*\n#[^\n]*\n\nDear customer,\n\nit ships today\.$/);
    expect(await owner.json<Draft>(['drafts', 'show', edited.draft_id])).toMatchObject({ subject: 'Changed in the editor', body: 'Dear customer,\n\nit ships today.', to: ['a@example.com', 'b@example.org'] });

    expect((await owner.run(['drafts', 'edit', edited.draft_id], { env: { EDITOR: 'true' } })).stdout).toBe(`no changes to ${edited.draft_id}\n`);
    const failed = await owner.run(['drafts', 'edit', edited.draft_id], { env: { EDITOR: 'false' } });
    expect(failed.code).toBe(1);
    expect(failed.stderr).toBe("error: the editor 'false' exited with 1; nothing was saved\n");
    const emptied = await owner.run(['drafts', 'create', '--mailbox', SUPPORT, '-e'], { env: { EDITOR: ': >' } });
    expect(emptied.code).toBe(1);
    expect(emptied.stderr).toBe('error: the draft is empty; nothing was saved\n');
    const broken = await owner.run(['drafts', 'create', '--mailbox', SUPPORT, '-e'], { env: { EDITOR: "printf 'Form: x@example.com\\n\\nbody' >" } });
    expect(broken.stderr).toBe('error: line 1 of the draft is not one of To:, Cc:, Bcc:, Subject: (write the body below an empty line)\n');

    const patched = await owner.json<Draft>(['drafts', 'edit', flagsId, '--cc', 'billing@example.com', '--body-file', '-'], { input: 'New body\nfrom stdin\n' });
    expect(patched).toMatchObject({ to: ['customer@example.com'], cc: ['billing@example.com'], body: 'New body\nfrom stdin\n' });

    const list = await owner.run(['drafts']);
    expect(cells(list.stdout.trimEnd().split('\n').slice(0, -1), ['ID', 'FROM', 'TO', 'SUBJECT', 'UPDATED']).map((r) => r[0])).toEqual([edited.draft_id, flagsId]);
    expect(list.stdout.trimEnd().split('\n').at(-1)).toBe('2 drafts');

    const sent = await owner.run(['drafts', 'send', flagsId]);
    const messageId = /(msg_[0-9a-z]{26})/.exec(sent.stdout)?.[1];
    expect(sent.stdout).toBe(`sent ${flagsId}: ${messageId} is queued (mailroom sent shows its delivery)\n`);
    expect((await owner.run(['drafts', 'show', flagsId])).stderr).toBe(`error: 404 draft_not_found: no draft ${flagsId}\n`);
    const copy = await owner.json<Message>(['messages', 'show', messageId ?? '']);
    expect(copy).toMatchObject({ folder: 'sent', subject: 'Your order', thread_id: thread });
    expect((await owner.run(['drafts', 'delete', edited.draft_id])).stdout).toBe(`deleted ${edited.draft_id}\n`);
    expect((await owner.run(['drafts'])).stdout).toBe('no drafts\n');
  });

  it('sends mail and lists it with its delivery status', async () => {
    const sent = await member.run(['send', '--from', SUPPORT, '--to', 'a@example.com,b@example.org', '--cc', 'c@example.com', '--subject', 'Report', '--body-file', '-', '--from-name', 'Acme Support'], {
      input: 'Line one\n',
    });
    expect(sent.stderr).toBe('');
    const id = /^(msg_[0-9a-z]{26}) is queued \(mailroom sent shows its delivery\)\n$/.exec(sent.stdout)?.[1] ?? '';
    expect(id).not.toBe('');

    const list = await member.run(['sent', '--mailbox', SUPPORT]);
    const rows = cells(list.stdout.trimEnd().split('\n').slice(0, -1), ['ID', 'TO', 'SUBJECT', 'STATUS', 'SENT', 'LAST ERROR']);
    expect(rows[0]).toEqual([id, 'a@example.com +1', 'Report', 'queued', expect.any(String), '']);
    const json = await member.json<{ messages: { message_id: string; status: string; recipients: { address: string }[] }[] }>(['sent']);
    expect(json.messages[0]).toMatchObject({ message_id: id, status: 'queued' });
    expect(json.messages[0]?.recipients.map((r) => r.address).sort()).toEqual(['a@example.com', 'b@example.org', 'c@example.com']);

    expect((await member.run(['send', '--from', SUPPORT, '--subject', 'x', '--body', 'x'])).stderr).toBe('error: give at least one --to\n');
    expect((await member.run(['send', '--from', SUPPORT, '--to', 'a@example.com', '--subject', 'x'])).stderr).toBe("error: give --body or --body-file (--body '' for none)\n");
    expect((await member.run(['send', '--to', 'a@example.com', '--subject', 'x', '--body', 'x'])).stderr).toContain("error: required option '--from <address>' not specified");
    const notOurs = await member.run(['send', '--from', 'nobody@mailroom.localhost', '--to', 'a@example.com', '--subject', 'x', '--body', 'x']);
    expect(notOurs.stderr).toBe('error: 404 mailbox_not_found: no mailbox nobody@mailroom.localhost in this workspace\n');
  });

  it('manages allow and block lists, entries with slashes included', async () => {
    expect((await member.run(['lists', 'add', 'inbound', 'block', '2001:DB8::1/32', '--reason', 'bad network'])).stdout).toBe('added 2001:db8::/32 (ip) to the inbound block list\n');
    expect((await member.run(['lists', 'add', 'outbound', 'block', 'Blocked.Example'])).stdout).toBe('added blocked.example (domain) to the outbound block list\n');

    const shown = await member.run(['lists', 'show', 'inbound', 'block', '2001:db8::/32']);
    expect(shown.stdout).toMatch(/^List +inbound block\nEntry +2001:db8::\/32\nKind +ip\nReason +bad network\nAdded +.+\n$/);
    const all = await member.run(['lists']);
    const lines = all.stdout.trimEnd().split('\n');
    expect(lines.at(-1)).toBe('2 entries in 4 lists');
    expect(cells(lines.slice(0, -1), ['LIST', 'ENTRY', 'KIND', 'REASON', 'ADDED']).map((r) => r.slice(0, 4))).toEqual([
      ['inbound block', '2001:db8::/32', 'ip', 'bad network'],
      ['outbound block', 'blocked.example', 'domain', ''],
    ]);
    expect((await member.json<{ entries: unknown[]; total: number }>(['lists', 'list', 'inbound', 'block'])).total).toBe(1);
    expect((await member.json<{ entries: unknown[]; total: number }>(['lists', 'list', 'outbound'])).total).toBe(1);

    const blocked = await member.run(['send', '--from', SUPPORT, '--to', 'someone@mail.blocked.example', '--subject', 'x', '--body', 'x']);
    expect(blocked.code).toBe(1);
    expect(blocked.stderr).toBe('error: 422 recipient_blocked: refused by the outbound lists: someone@mail.blocked.example\n');

    expect((await member.run(['lists', 'remove', 'inbound', 'block', '2001:db8::/32'])).stdout).toBe('removed 2001:db8::/32 from the inbound block list\n');
    expect((await member.run(['lists', 'show', 'inbound', 'block', '2001:db8::/32'])).stderr).toBe("error: 404 entry_not_found: no inbound block entry '2001:db8::/32'\n");
    expect((await member.run(['lists', 'add', 'sideways', 'block', 'x.example'])).stderr).toBe('error: 400 invalid_direction: direction must be inbound or outbound\n');
  });

  it('adds a sending domain showing the DNS records to publish, and verifies it', async () => {
    expect((await member.run(['domains'])).stderr).toBe('error: 403 forbidden_role: sending domains need the owner or admin role\n');

    const created = await owner.run(['domains', 'create', 'Acme.Example']);
    expect(created.stderr).toBe('');
    const out = created.stdout;
    const id = /^added acme\.example \((dom_[0-9a-z]{26})\), pending\n/.exec(out)?.[1] ?? '';
    expect(id).not.toBe('');
    expect(out).toContain('Publish these TXT records in its DNS:\n\n  Verification (shown only now: keep it until it is published)\n    name   _mailroom-verification.acme.example\n    type   TXT\n    value  mailroom-verification=');
    expect(out).toMatch(/\n {2}DKIM\n {4}name {3}\S+\._domainkey\.acme\.example\n {4}type {3}TXT\n {4}value {2}v=DKIM1; k=rsa; p=[A-Za-z0-9+/=]+\n\n/);
    expect(out).toMatch(/\n {2}SPF \(advice, not required[^\n]*\n {4}name {3}acme\.example\n {4}type {3}TXT\n {4}value {2}v=spf1 include:mailroom\.localhost ~all\n\nThen run: mailroom domains verify dom_/);
    const record = /value {2}(mailroom-verification=\S+)/.exec(out)?.[1] ?? '';
    const dkim = /value {2}(v=DKIM1; \S+ \S+)/.exec(out)?.[1] ?? '';
    const dkimName = /name {3}(\S+\._domainkey\.acme\.example)/.exec(out)?.[1] ?? '';

    // The API's per-record answer as a table, then what DNS has against what it should, for each record not ok.
    h.dns.set('acme.example', { TXT: ['v=spf1 include:_spf.elsewhere.example -all'] });
    const pending = (await owner.run(['domains', 'verify', 'acme.example'])).stdout.split('\n');
    expect(pending.slice(0, 2)).toEqual(['acme.example is pending: the verification record is not published yet; DKIM: missing', '']);
    expect(cells(pending.slice(2, 6), ['RECORD', 'STATUS', 'NAME', 'REASON'])).toEqual([
      ['verification', 'missing', '_mailroom-verification.acme.example', 'no TXT record at _mailroom-verification.acme.example yet: publish it (a new record can take a while to show in DNS)'],
      ['dkim', 'missing', dkimName, expect.stringMatching(/^no TXT record at \S+: mail from acme\.example is signed with this key all the same/)],
      ['spf (advice)', 'mismatch', 'acme.example', expect.stringMatching(/^the SPF record of acme\.example does not include mailroom\.localhost\. Not required/)],
    ]);
    expect(pending.slice(6).join('\n')).toBe(
      [
        '',
        '  verification',
        '    found    (nothing)',
        '    expected mailroom-verification=<the token shown at creation or by the last records regeneration> — lost it? mailroom domains records acme.example makes a new one',
        '',
        '  dkim',
        '    found    (nothing)',
        `    expected ${dkim}`,
        '',
        '  spf (advice)',
        '    found    v=spf1 include:_spf.elsewhere.example -all',
        '    expected v=spf1 include:mailroom.localhost ~all',
        '',
      ].join('\n'),
    );
    h.dns.set('_mailroom-verification.acme.example', { TXT: ['v=spf1 -all', record] });
    const verified = (await owner.run(['domains', 'verify', id])).stdout.split('\n');
    expect(verified[0]).toMatch(/^acme\.example is verified, but its DKIM record is missing: mail from it is signed/);
    expect(cells(verified.slice(2, 6), ['RECORD', 'STATUS', 'NAME', 'REASON']).map((r) => r.slice(0, 2))).toEqual([
      ['verification', 'ok'],
      ['dkim', 'missing'],
      ['spf (advice)', 'mismatch'],
    ]);
    h.dns.set(dkimName, { TXT: [dkim] });
    expect((await owner.json<{ summary: string; checks: { dkim: { status: string } } }>(['domains', 'verify', id])).checks.dkim.status).toBe('ok');

    const list = await owner.run(['sending-domains']);
    expect(cells(list.stdout.trimEnd().split('\n'), ['ID', 'DOMAIN', 'STATUS', 'DKIM SELECTOR', 'CREATED']).map((r) => r.slice(0, 3))).toEqual([[id, 'acme.example', 'verified']]);
    const shown = await owner.json<{ status: string; verification?: unknown }>(['domains', 'show', 'acme.example']);
    expect(shown.status).toBe('verified');
    expect(shown.verification).toBeUndefined();
    expect((await owner.run(['domains', 'show', 'nope.example'])).stderr).toBe('error: nope.example is not a sending domain of this workspace (mailroom domains lists them)\n');
    expect((await member.run(['mailboxes', 'create', 'billing@acme.example'])).code).toBe(0);
  });

  it('shows the records again (a pending domain with a new token) and deletes a domain once no mailbox is in it', async () => {
    const created = await owner.json<{ domain_id: string; verification: { record_value: string } }>(['domains', 'create', 'second.example']);
    const again = await owner.run(['domains', 'records', 'second.example']);
    expect(again.stderr).toBe('');
    expect(again.stdout).toMatch(
      /^second\.example has a new verification token: the earlier one no longer verifies\. Publish these TXT records in its DNS:\n\n {2}Verification \(shown only now\)\n {4}name {3}_mailroom-verification\.second\.example\n {4}type {3}TXT\n {4}value {2}mailroom-verification=\S+\n\n {2}DKIM\n/,
    );
    expect(again.stdout).toMatch(/\n\nThen run: mailroom domains verify second\.example\n$/);
    const token = /value {2}(mailroom-verification=\S+)/.exec(again.stdout)?.[1] ?? '';
    expect(token).not.toBe(created.verification.record_value);
    h.dns.set('_mailroom-verification.second.example', { TXT: [created.verification.record_value] });
    expect((await owner.json<{ checks: { verification: { status: string } } }>(['domains', 'verify', 'second.example'])).checks.verification.status).toBe('mismatch');

    const verified = await owner.run(['domains', 'records', 'acme.example']);
    expect(verified.stdout).toMatch(/^acme\.example is verified: it needs no verification record any more\.\n\n {2}DKIM\n.*\n {2}SPF \(advice/s);

    expect((await owner.run(['domains', 'delete', 'acme.example'])).stderr).toBe('error: deleting acme.example cannot be undone (its DKIM key goes with it); pass --yes to go ahead\n');
    const refused = await owner.run(['domains', 'delete', 'acme.example', '--yes']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      'error: 409 domain_in_use: acme.example still has 1 mailbox (billing@acme.example); delete the mailboxes first (their service tokens go with them)\n',
    );
    expect((await h.app.inject({ method: 'DELETE', url: '/mailboxes/billing@acme.example', headers: { authorization: `Bearer ${acme.apiKey}` } })).statusCode).toBe(200);
    expect((await owner.run(['domains', 'delete', 'acme.example', '--yes'])).stdout).toMatch(/^deleted acme\.example \(dom_[0-9a-z]{26}\)\n$/);
    expect((await owner.run(['domains', 'delete', created.domain_id, '--yes'])).stdout).toBe(`deleted second.example (${created.domain_id})\n`);
    expect((await owner.run(['domains'])).stdout).toBe('no sending domains yet: mailroom domains create <domain>\n');
  });
});

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MessageListView } from '../src/modules/messages/message.types.js';
import { runCli } from './helpers/cli.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, type Tenant } from './helpers/harness.js';
import { startMailHarness, type MailHarness } from './helpers/mail.js';

const FOLDERS = ['inbox', 'archive', 'sent', 'spam', 'trash'] as const;

/** A message of a mailbox as its workspace's API key sees it, with its raw source. */
interface Held {
  id: string;
  folder: string;
  read: boolean;
  labels: string[];
  threadId: string;
  subject: string;
  createdAt: string;
  raw: Buffer;
}

/** A body whose lines start with `From ` and quoted `>From `: what mbox must escape and give back byte for byte. */
const FROM_LINES_RAW = [
  'From: Fromm <fromm@sender.test>',
  'To: alpha@mailroom.localhost',
  'Subject: From lines inside',
  'Message-ID: <from-lines@sender.test>',
  'Date: Thu, 19 Nov 2026 08:00:00 +0000',
  '',
  'From here on the body starts lines with From.',
  '>From quoted once',
  '>>From quoted twice',
  'From',
  'Fromage is no From line',
  '',
].join('\r\n');

describe(`mailbox export and import (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let acme: Tenant;
  let globex: Tenant;
  let dir: string;

  const mailbox = async (tenant: Tenant, address: string) => {
    const res = await h.app.inject({ method: 'POST', url: `/mailboxes?address=${encodeURIComponent(address)}`, headers: bearer(tenant.apiKey) });
    expect(res.statusCode).toBe(201);
  };

  /** Every message of a mailbox, folder by folder, oldest first, with its bytes. */
  async function contents(tenant: Tenant, address: string): Promise<Held[]> {
    const held: Held[] = [];
    for (const folder of FOLDERS) {
      const res = await h.app.inject({ url: `/inbox?mailbox=${encodeURIComponent(address)}&folder=${folder}&limit=200`, headers: bearer(tenant.apiKey) });
      expect(res.statusCode).toBe(200);
      for (const m of res.json<{ messages: MessageListView[] }>().messages.reverse()) {
        const raw = await h.app.inject({ url: `/messages/${m.message_id}/raw`, headers: bearer(tenant.apiKey) });
        held.push({ id: m.message_id, folder: m.folder, read: m.read, labels: m.labels, threadId: m.thread_id, subject: m.subject, createdAt: m.created_at, raw: raw.rawPayload });
      }
    }
    return held;
  }
  /** What must survive a round trip: bytes, folder and read state, and when it arrived (to the second). */
  const essence = (held: Held[]) =>
    held.map((m) => ({ raw: m.raw.toString('base64'), folder: m.folder, read: m.read, at: m.createdAt.slice(0, 19) })).sort((a, b) => a.raw.localeCompare(b.raw));

  const stats = async (tenant: Tenant) => (await h.app.inject({ url: '/stats', headers: bearer(tenant.apiKey) })).json<Record<string, unknown>>();
  const env = () => ({ MAILROOM_DATABASE_URL: h.database.url, ...h.database.secretEnv });

  beforeAll(async () => {
    h = await startMailHarness({ MAILROOM_SMTP_MAX_SIZE: String(256 * 1024) });
    h.clock.set(Date.now());
    dir = mkdtempSync(join(tmpdir(), 'mailroom-transfer-'));
    acme = await createTenant(h, 'Acme');
    globex = await createTenant(h, 'Globex');
    for (const address of ['alpha@mailroom.localhost', 'beta@mailroom.localhost', 'py-mbox@mailroom.localhost', 'py-maildir@mailroom.localhost', 'cli@mailroom.localhost']) await mailbox(acme, address);
    await mailbox(globex, 'gamma@mailroom.localhost');

    // The source mailbox: a message with From lines, one with an attachment, a reply, one without Message-ID.
    await h.sendRaw(FROM_LINES_RAW, { from: 'fromm@sender.test', to: ['alpha@mailroom.localhost'] });
    h.clock.advance(60_000);
    await h.send({ from: 'Ann <ann@sender.test>', to: 'alpha@mailroom.localhost', subject: 'Quarterly report', text: 'See the zebrafish numbers attached.', attachments: [{ filename: 'report.csv', content: 'a,b\n1,2\n' }] });
    h.clock.advance(60_000);
    await h.send({ from: 'fromm@sender.test', to: 'alpha@mailroom.localhost', subject: 'Re: From lines inside', text: 'A reply.', inReplyTo: '<from-lines@sender.test>', references: ['<from-lines@sender.test>'] });
    h.clock.advance(60_000);
    await h.sendRaw('From: nobody@sender.test\r\nTo: alpha@mailroom.localhost\r\nSubject: No id\r\n\r\nNo Message-ID here.\r\n', { from: '', to: ['alpha@mailroom.localhost'] });
    h.clock.advance(60_000);
    await h.send({ from: 'spam@sender.test', to: 'alpha@mailroom.localhost', subject: 'Old news', text: 'Archived.' });
    const held = await contents(acme, 'alpha@mailroom.localhost');
    const bySubject = (s: string) => held.find((m) => m.subject === s)!.id;
    await h.app.inject({ method: 'POST', url: `/messages/${bySubject('Quarterly report')}/read`, headers: bearer(acme.apiKey) });
    await h.app.inject({ method: 'POST', url: `/messages/${bySubject('Old news')}/move`, headers: bearer(acme.apiKey), payload: { folder: 'archive' } });
    await h.app.inject({ method: 'POST', url: `/messages/${bySubject('Old news')}/read`, headers: bearer(acme.apiKey) });
    await h.app.inject({ method: 'POST', url: `/messages/${bySubject('No id')}/move`, headers: bearer(acme.apiKey), payload: { folder: 'trash' } });
  });
  afterAll(async () => {
    await h.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('exports one mboxrd file per folder, the stored bytes exactly, From lines quoted', async () => {
    const out = join(dir, 'alpha-export');
    const summary = await h.services.mailTransfer.exportMailbox({ address: 'alpha@mailroom.localhost', workspaceId: acme.workspaceId }, out);
    expect(summary.messages).toBe(5);
    expect(readdirSync(out).sort()).toEqual(['archive', 'inbox', 'trash']);
    const inbox = readFileSync(join(out, 'inbox'), 'latin1');
    expect(inbox.match(/^From /gm)).toHaveLength(3);
    expect(inbox).toContain('\r\n>From here on the body starts');
    expect(inbox).toContain('\r\n>>From quoted once\r\n>>>From quoted twice\r\nFrom\r\nFromage');
    // The read state rides on the separator line; nothing is added inside a message.
    expect(inbox).toMatch(/^From ann@sender\.test \w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4} flags=S\n/m);
    expect(inbox).not.toContain('X-Mailroom');
    expect(readFileSync(join(out, 'trash'), 'latin1')).toMatch(/^From MAILER-DAEMON /);
    await expect(h.services.mailTransfer.exportMailbox({ address: 'alpha@mailroom.localhost', workspaceId: null }, out)).rejects.toMatchObject({ code: 'export_target_exists' });
  });

  it('round trip: an export imported into another mailbox gives the same bytes, folders, read state and dates; again, nothing', async () => {
    const out = join(dir, 'alpha-export');
    const ref = { address: 'beta@mailroom.localhost', workspaceId: acme.workspaceId };
    const first = await h.services.mailTransfer.importMailbox(ref, out);
    expect(first).toMatchObject({ source: 'mbox directory', imported: 5, duplicates: 0, refused: 0, folders: { inbox: 3, archive: 1, trash: 1 } });
    const alpha = await contents(acme, 'alpha@mailroom.localhost');
    const beta = await contents(acme, 'beta@mailroom.localhost');
    expect(essence(beta)).toEqual(essence(alpha));
    // Threaded as inbound mail is: the reply joins its original.
    const original = beta.find((m) => m.subject === 'From lines inside')!;
    expect(beta.find((m) => m.subject === 'Re: From lines inside')!.threadId).toBe(original.threadId);
    expect(original.raw.toString('latin1')).toContain('\r\nFrom here on the body starts lines with From.\r\n>From quoted once\r\n>>From quoted twice\r\n');
    // Indexed as inbound mail is: a search finds it, and its attachment is there.
    const search = await h.app.inject({ url: '/inbox?mailbox=beta@mailroom.localhost&q=zebrafish', headers: bearer(acme.apiKey) });
    const hits = search.json<{ messages: MessageListView[] }>().messages;
    expect(hits.map((m) => m.subject)).toEqual(['Quarterly report']);
    expect(hits[0]!.attachments.map((a) => a.filename)).toEqual(['report.csv']);

    const again = await h.services.mailTransfer.importMailbox(ref, out);
    expect(again).toMatchObject({ imported: 0, duplicates: 5, refused: 0 });
    expect(await contents(acme, 'beta@mailroom.localhost')).toHaveLength(5);
  });

  it('imports an mbox and a Maildir written by Python\'s mailbox module, with flags and subfolders; a re-run imports nothing', async () => {
    const script = join(dir, 'write.py');
    writeFileSync(
      script,
      `
import mailbox, sys, time
from email.message import EmailMessage
def msg(subject, body, mid=True):
    m = EmailMessage()
    m['From'] = 'py@sender.test'
    m['To'] = 'someone@mailroom.localhost'
    m['Subject'] = subject
    m['Date'] = 'Mon, 02 Nov 2026 10:00:00 +0000'
    if mid: m['Message-ID'] = '<%s@py.test>' % subject.replace(' ', '-')
    m.set_content(body)
    return m
box = mailbox.mbox(sys.argv[1])
seen = mailbox.mboxMessage(msg('seen one', 'read already'))
seen.set_flags('RO'); seen.set_from('py@sender.test', time.gmtime(1793000000))
box.add(seen)
flagged = mailbox.mboxMessage(msg('flagged one', 'important'))
flagged.set_flags('OF'); box.add(flagged)
box.add(mailbox.mboxMessage(msg('from body', 'From the start of a line\\nand more\\n')))
box.flush(); box.close()
md = mailbox.Maildir(sys.argv[2], create=True)
new = mailbox.MaildirMessage(msg('new mail', 'unseen')); md.add(new)
cur = mailbox.MaildirMessage(msg('read mail', 'seen')); cur.set_subdir('cur'); cur.set_flags('S'); cur.set_date(1793000000); md.add(cur)
gone = mailbox.MaildirMessage(msg('deleted mail', 'trashed')); gone.set_subdir('cur'); gone.set_flags('ST'); md.add(gone)
for name, flags in [('Sent', 'S'), ('Archive', 'SF'), ('Trash', 'S'), ('Junk', ''), ('Drafts', 'D')]:
    f = md.add_folder(name)
    m = mailbox.MaildirMessage(msg('in ' + name, 'x', mid=(name != 'Junk'))); m.set_subdir('cur'); m.set_flags(flags); f.add(m)
`,
    );
    const mboxFile = join(dir, 'py.mbox');
    const maildir = join(dir, 'py-maildir');
    execFileSync('python3', [script, mboxFile, maildir]);

    const mboxRef = { address: 'py-mbox@mailroom.localhost', workspaceId: acme.workspaceId };
    const fromMbox = await h.services.mailTransfer.importMailbox(mboxRef, mboxFile);
    expect(fromMbox).toMatchObject({ source: 'mbox', imported: 3, duplicates: 0, refused: 0, flags_ignored: 1, folders: { inbox: 3 } });
    const inMbox = await contents(acme, 'py-mbox@mailroom.localhost');
    expect(Object.fromEntries(inMbox.map((m) => [m.subject, m.read]))).toEqual({ 'seen one': true, 'flagged one': false, 'from body': false });
    // The From line's date is when it arrived; Python quoted the body's From line (mboxo), which mboxrd reading undoes.
    expect(inMbox.find((m) => m.subject === 'seen one')!.createdAt).toBe(new Date(1793000000 * 1000).toISOString());
    expect(inMbox.find((m) => m.subject === 'from body')!.raw.toString('latin1')).toContain('\nFrom the start of a line\n');
    expect((await h.services.mailTransfer.importMailbox(mboxRef, mboxFile)).imported).toBe(0);

    const mdRef = { address: 'py-maildir@mailroom.localhost', workspaceId: acme.workspaceId };
    const fromMaildir = await h.services.mailTransfer.importMailbox(mdRef, maildir);
    expect(fromMaildir).toMatchObject({ source: 'maildir', imported: 8, duplicates: 0, refused: 0, folders: { inbox: 2, sent: 1, archive: 2, trash: 2, spam: 1 } });
    const inMaildir = await contents(acme, 'py-maildir@mailroom.localhost');
    const place = Object.fromEntries(inMaildir.map((m) => [m.subject, [m.folder, m.read, m.labels.join(',')]]));
    expect(place).toEqual({
      'new mail': ['inbox', false, ''],
      'read mail': ['inbox', true, ''],
      'deleted mail': ['trash', true, ''],
      'in Sent': ['sent', true, ''],
      'in Archive': ['archive', true, ''],
      'in Trash': ['trash', true, ''],
      'in Junk': ['spam', false, ''],
      'in Drafts': ['archive', false, 'drafts'],
    });
    // A Maildir file's mtime is when it arrived.
    expect(inMaildir.find((m) => m.subject === 'read mail')!.createdAt).toBe(new Date(1793000000 * 1000).toISOString());
    const rerun = await h.services.mailTransfer.importMailbox(mdRef, maildir);
    expect(rerun).toMatchObject({ imported: 0, duplicates: 8 });
    expect(await contents(acme, 'py-maildir@mailroom.localhost')).toHaveLength(8);
  });

  it('refuses messages over the size limit, counting them, and stores the rest', async () => {
    const big = `From big@sender.test Mon Nov  2 10:00:00 2026\nSubject: big\n\n${'x'.repeat(h.config.smtpMaxSize + 10)}\n\nFrom small@sender.test Mon Nov  2 10:00:01 2026\nSubject: small one\nMessage-ID: <small@sender.test>\n\nfits\n\n`;
    const file = join(dir, 'big.mbox');
    writeFileSync(file, big);
    const warnings: string[] = [];
    const result = await h.services.mailTransfer.importMailbox({ address: 'py-mbox@mailroom.localhost', workspaceId: null }, file, { onWarning: (w) => warnings.push(w) });
    expect(result).toMatchObject({ imported: 1, refused: 1 });
    expect(warnings.join('\n')).toContain('over the size limit');
  });

  it("keeps workspaces apart: another workspace's address is not found, and an import into one leaves the other as it was", async () => {
    const out = join(dir, 'alpha-export');
    const before = await stats(globex);
    await expect(h.services.mailTransfer.importMailbox({ address: 'gamma@mailroom.localhost', workspaceId: acme.workspaceId }, out)).rejects.toMatchObject({ code: 'mailbox_not_found' });
    await expect(h.services.mailTransfer.exportMailbox({ address: 'alpha@mailroom.localhost', workspaceId: globex.workspaceId }, join(dir, 'nope'))).rejects.toMatchObject({ code: 'mailbox_not_found' });
    expect(await stats(globex)).toEqual(before);
    expect(await contents(globex, 'gamma@mailroom.localhost')).toEqual([]);
    // The same mail imported into the other workspace is that workspace's own: no duplicate of acme's.
    const into = await h.services.mailTransfer.importMailbox({ address: 'gamma@mailroom.localhost', workspaceId: globex.workspaceId }, out);
    expect(into).toMatchObject({ imported: 5, duplicates: 0 });
    expect(essence(await contents(globex, 'gamma@mailroom.localhost'))).toEqual(essence(await contents(acme, 'alpha@mailroom.localhost')));
  });

  it('the CLI exports and imports (needs npm run build), and refuses an address outside the workspace named', async () => {
    const out = join(dir, 'cli-export');
    const exported = await runCli(['admin', 'export-mailbox', 'alpha@mailroom.localhost', out, '--json'], env(), 60_000);
    expect(exported.stderr).toBe('');
    expect(JSON.parse(exported.stdout)).toMatchObject({ messages: 5, address: 'alpha@mailroom.localhost' });
    const imported = await runCli(['admin', 'import-mailbox', 'cli@mailroom.localhost', out, '--workspace', acme.workspaceId], env(), 60_000);
    expect(imported.code).toBe(0);
    expect(imported.stdout).toMatch(/^imported {3}5 \(archive 1, inbox 3, trash 1\) into cli@mailroom\.localhost$/m);
    expect(imported.stdout).toMatch(/^duplicates 0/m);
    const again = await runCli(['admin', 'import-mailbox', 'cli@mailroom.localhost', out, '--json'], env(), 60_000);
    expect(JSON.parse(again.stdout)).toMatchObject({ imported: 0, duplicates: 5, refused: 0 });
    expect(essence(await contents(acme, 'cli@mailroom.localhost'))).toEqual(essence(await contents(acme, 'alpha@mailroom.localhost')));

    const refused = await runCli(['admin', 'import-mailbox', 'gamma@mailroom.localhost', out, '--workspace', acme.workspaceId], env(), 60_000);
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim()).toBe(`mailroom: no mailbox gamma@mailroom.localhost in workspace ${acme.workspaceId} (mailbox_not_found)`);
  });
});

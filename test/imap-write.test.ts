import { ImapFlow } from 'imapflow';
import { beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/lib/logger.js';
import { createImapServer, type ImapServer } from '../src/transports/imap/server.js';
import { TEST_DIALECT } from './helpers/database.js';
import { imaplib, latin1, type Answer, type Step } from './helpers/imaplib.js';
import { bearer } from './helpers/harness.js';
import { mailWorld, type MessageView, type WorldTenant } from './helpers/world.js';


const MAILBOX = 'imap-writer@mailroom.localhost';
const OTHER = 'imap-bystander@mailroom.localhost';
const FULL = 'imap-full@mailroom.localhost';
const APPEND_LIMIT = 1024 * 1024;
/** The text of an answer's data (imaplib's list of lines or of its tagged text). */
const textOf = (a: Answer | undefined) => (Array.isArray(a?.data) ? (a.data as unknown[]).map((d) => (Array.isArray(d) ? d.join(' ') : String(d))).join('\n') : String(a?.data));

function message(subject: string, messageId: string, body = 'Written by a mail client.\r\n'): string {
  return `From: Writer <${MAILBOX}>\r\nTo: <friend@peer.test>\r\nSubject: ${subject}\r\nMessage-ID: <${messageId}>\r\nDate: Sun, 01 Nov 2026 09:30:00 +0000\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n${body}`;
}

// Each test runs several imaplib sessions (a Python start and an app-password scrypt each): slow on a busy machine.
describe(`IMAP COPY, MOVE and APPEND (${TEST_DIALECT})`, { timeout: 240_000 }, () => {
  const world = mailWorld({ peer: false, env: { MAILROOM_ALLOW_PLAINTEXT_AUTH: 'loopback' } });
  let acme: WorldTenant;
  let other: WorldTenant;
  let full: WorldTenant;
  const passwords = new Map<string, string>();
  let port: number;

  const appPassword = async (tenant: WorldTenant, mailbox: string): Promise<string> => (await world.appPassword(tenant, mailbox, 'imap-write')).password;
  const tenantOf = (address: string) => (address === OTHER ? other : address === FULL ? full : acme);
  const deliver = async (to: string, subject: string): Promise<string> => {
    const raw = `From: Alice <alice@sender.test>\r\nTo: <${to}>\r\nSubject: ${subject}\r\nMessage-ID: <${subject.replace(/\W/g, '')}@sender.test>\r\nDate: Fri, 20 Nov 2026 10:00:00 +0000\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nHello from SMTP.\r\n`;
    await world.h.sendRaw(raw, { from: 'alice@sender.test', to: [to] });
    const found = (await folderList(to, 'inbox')).find((m) => m.subject === subject);
    if (!found) throw new Error(`message ${subject} was not stored`);
    return found.message_id;
  };
  /** A folder's messages as the API lists them (GET /inbox?folder=…). */
  const folderList = async (address: string, folder: string): Promise<MessageView[]> => {
    const res = await world.h.app.inject({ method: 'GET', url: `/inbox?mailbox=${encodeURIComponent(address)}&folder=${folder}&limit=200`, headers: bearer(tenantOf(address).apiKey) });
    expect(res.statusCode).toBe(200);
    return res.json<{ messages: MessageView[] }>().messages;
  };
  const rawOf = async (tenant: WorldTenant, id: string) => (await world.h.app.inject({ method: 'GET', url: `/messages/${id}/raw`, headers: bearer(tenant.apiKey) })).rawPayload;
  const login = (address: string): Step => ['login', address, passwords.get(address)!];
  /** The UID of the message with this subject in an IMAP folder (exactly one). */
  const uidOf = async (address: string, folder: string, subject: string): Promise<number> => {
    const answers = await imaplib(port, [login(address), ['select', folder], ['uid', 'SEARCH', 'SUBJECT', `"${subject}"`]]);
    const uids = String((answers[3]!.data as string[])[0]).trim().split(' ').filter(Boolean);
    expect(uids, subject).toHaveLength(1);
    return Number(uids[0]);
  };
  /** STATUS items of an IMAP folder, by name. */
  const status = async (address: string, folder: string): Promise<Record<'MESSAGES' | 'UIDNEXT' | 'UIDVALIDITY' | 'HIGHESTMODSEQ', number>> => {
    const answers = await imaplib(port, [login(address), ['raw', `STATUS ${folder} (MESSAGES UIDNEXT UIDVALIDITY HIGHESTMODSEQ)`]]);
    const line = (answers[2]!.data as string[])[0]!;
    const items = line.slice(line.indexOf('(') + 1, -1).split(' ');
    const out: Record<string, number> & Record<'MESSAGES' | 'UIDNEXT' | 'UIDVALIDITY' | 'HIGHESTMODSEQ', number> = { MESSAGES: 0, UIDNEXT: 0, UIDVALIDITY: 0, HIGHESTMODSEQ: 0 };
    for (let i = 0; i < items.length; i += 2) out[items[i]!] = Number(items[i + 1]);
    return out;
  };
  const storedBytes = async (tenant: WorldTenant) => (await world.h.services.quotas.usageOf(tenant.workspaceId)).usage.stored_bytes;

  beforeAll(async () => {
    acme = await world.tenant('Acme', [MAILBOX]);
    other = await world.tenant('Other', [OTHER]);
    full = await world.tenant('Full', [FULL]);
    for (const [tenant, address] of [[acme, MAILBOX], [other, OTHER], [full, FULL]] as const) passwords.set(address, await appPassword(tenant, address));
    const s: ImapServer = createImapServer({ access: world.h.services.imapAccess, logger: createLogger('silent'), appendLimit: APPEND_LIMIT, maxClients: 20, maxClientsPerIp: 10, allowPlaintextAuth: 'loopback', tls: null });
    world.own(s);
    port = await s.listen('127.0.0.1', 0);
  });

  it('advertises UIDPLUS, MOVE and APPENDLIMIT (the SMTP size limit)', async () => {
    const [hello, , caps] = await imaplib(port, [login(MAILBOX), ['capability']]);
    for (const cap of ['UIDPLUS', 'MOVE', `APPENDLIMIT=${APPEND_LIMIT}`]) {
      expect(hello!.capabilities).toContain(cap);
      expect(String((caps!.data as string[])[0]).split(' ')).toContain(cap);
    }
  });

  it('UID COPY makes new messages with the same bytes, flags, labels and thread; COPYUID names them; the bytes count', async () => {
    const id = await deliver(MAILBOX, 'Copy me');
    const uid = await uidOf(MAILBOX, 'INBOX', 'Copy me');
    await imaplib(port, [login(MAILBOX), ['select', 'INBOX'], ['uid', 'STORE', String(uid), '+FLAGS', '(\\Seen \\Flagged Work)']]);
    const archive = await status(MAILBOX, 'Archive');
    const before = await storedBytes(acme);
    const answers = await imaplib(port, [login(MAILBOX), ['select', 'INBOX'], ['raw', `UID COPY ${uid} Archive`]]);
    expect(answers[3]!.typ).toBe(`OK [COPYUID ${archive.UIDVALIDITY} ${uid} ${archive.UIDNEXT}] Copy completed.`);
    const original = (await world.message(acme, id))!;
    expect(original).toMatchObject({ folder: 'inbox', read: true, flagged: true, labels: ['work'] });
    const copies = (await folderList(MAILBOX, 'archive')).filter((m) => m.subject === 'Copy me');
    expect(copies).toHaveLength(1);
    const copy = (await world.message(acme, copies[0]!.message_id))!;
    expect(copy.message_id).not.toBe(id);
    expect(copy).toMatchObject({ folder: 'archive', read: true, flagged: true, labels: ['work'], thread_id: original.thread_id, size: original.size, created_at: original.created_at });
    expect((await rawOf(acme, copy.message_id)).equals(await rawOf(acme, id))).toBe(true);
    expect(await storedBytes(acme)).toBe(before + Number(original.size));
    expect(await uidOf(MAILBOX, 'Archive', 'Copy me')).toBe(archive.UIDNEXT);
    // The copy is found by the full-text search as the original is.
    const search = await world.h.app.inject({ method: 'GET', url: `/inbox?mailbox=${encodeURIComponent(MAILBOX)}&folder=archive&q=copy`, headers: bearer(acme.apiKey) });
    expect(search.json<{ messages: MessageView[] }>().messages.map((m) => m.message_id)).toContain(copy.message_id);
    // Deleting the original leaves the copy whole.
    expect((await world.h.app.inject({ method: 'DELETE', url: `/messages/${id}`, headers: bearer(acme.apiKey) })).statusCode).toBeLessThan(300);
    expect((await rawOf(acme, copy.message_id)).length).toBe(Number(original.size));
  });

  it('MOVE is the API move: COPYUID comes untagged before the EXPUNGE (VANISHED with QRESYNC), and a resync sees it vanish', async () => {
    const id = await deliver(MAILBOX, 'Move me');
    const uid = await uidOf(MAILBOX, 'INBOX', 'Move me');
    const inbox = await status(MAILBOX, 'INBOX');
    const trash = await status(MAILBOX, 'Trash');
    const answers = await imaplib(port, [login(MAILBOX), ['raw', 'ENABLE QRESYNC'], ['raw', 'SELECT INBOX'], ['raw', `UID MOVE ${uid} Trash`]]);
    const lines = answers[4]!.data as string[];
    expect(answers[4]!.typ).toBe('OK Move completed.');
    const copyuid = lines.indexOf(`* OK [COPYUID ${trash.UIDVALIDITY} ${uid} ${trash.UIDNEXT}] Moved UIDs.`);
    const vanished = lines.indexOf(`* VANISHED ${uid}`);
    expect(copyuid, lines.join('\n')).toBeGreaterThanOrEqual(0);
    expect(vanished).toBeGreaterThan(copyuid);
    expect(await world.message(acme, id)).toMatchObject({ message_id: id, folder: 'trash' });
    expect(await uidOf(MAILBOX, 'Trash', 'Move me')).toBe(trash.UIDNEXT);
    const resync = await imaplib(port, [login(MAILBOX), ['raw', 'ENABLE QRESYNC'], ['raw', `SELECT INBOX (QRESYNC (${inbox.UIDVALIDITY} ${inbox.HIGHESTMODSEQ}))`]]);
    expect(resync[3]!.data).toContain(`* VANISHED (EARLIER) ${uid}`);

    // Without QRESYNC the moved message is expunged by number.
    await deliver(MAILBOX, 'Move me too');
    const second = await uidOf(MAILBOX, 'INBOX', 'Move me too');
    const plain = await imaplib(port, [login(MAILBOX), ['select', 'INBOX'], ['raw', `UID MOVE ${second} Archive`]]);
    const plainLines = plain[3]!.data as string[];
    const at = plainLines.findIndex((l) => l.startsWith('* OK [COPYUID '));
    expect(at).toBeGreaterThanOrEqual(0);
    expect(plainLines.slice(at + 1).some((l) => /^\* \d+ EXPUNGE$/.test(l))).toBe(true);
  });

  it('MOVE into the selected folder gives the message a new UID there, as Dovecot does', async () => {
    const id = await deliver(MAILBOX, 'Move in place');
    const uid = await uidOf(MAILBOX, 'INBOX', 'Move in place');
    const inbox = await status(MAILBOX, 'INBOX');
    const answers = await imaplib(port, [login(MAILBOX), ['select', 'INBOX'], ['raw', `UID MOVE ${uid} INBOX`]]);
    const lines = (answers[3]!.data as string[]).join('\n');
    expect(lines).toContain(`* OK [COPYUID ${inbox.UIDVALIDITY} ${uid} ${inbox.UIDNEXT}]`);
    expect(lines).toMatch(/^\* \d+ EXPUNGE$/m);
    expect(lines).toMatch(/^\* \d+ EXISTS$/m);
    expect(await uidOf(MAILBOX, 'INBOX', 'Move in place')).toBe(inbox.UIDNEXT);
    expect(await world.message(acme, id)).toMatchObject({ folder: 'inbox' });
    expect((await status(MAILBOX, 'INBOX')).MESSAGES).toBe(inbox.MESSAGES);
  });

  it('COPY, MOVE and APPEND refuse unknown mailboxes with NO [TRYCREATE]; nothing changes', async () => {
    await deliver(MAILBOX, 'Stay here');
    const total = async () => (await world.h.app.inject({ method: 'GET', url: '/stats', headers: bearer(acme.apiKey) })).json<{ messages: number }>().messages;
    const before = await total();
    const raw = message('Not stored', 'not-stored@client.test');
    const answers = await imaplib(port, [login(MAILBOX), ['select', 'INBOX'], ['raw', 'UID COPY 1:* Nowhere'], ['raw', 'MOVE 1 Nowhere'], ['append', 'Nowhere', null, null, raw]]);
    expect(answers[3]!.typ).toMatch(/^NO \[TRYCREATE\]/);
    expect(answers[4]!.typ).toMatch(/^NO \[TRYCREATE\]/);
    expect(answers[5]).toMatchObject({ typ: 'NO' });
    expect(textOf(answers[5])).toMatch(/^\[TRYCREATE\]/);
    expect(await total()).toBe(before);
  });

  it('APPEND stores the message with its flags, keywords and internal date; APPENDUID names it; the API shows it', async () => {
    const raw = message('Appended here', 'appended-1@client.test', 'Line one.\r\nCaf\u00e9.\r\n');
    const inbox = await status(MAILBOX, 'INBOX');
    const answers = await imaplib(port, [login(MAILBOX), ['append', 'INBOX', '(\\Seen \\Flagged Work $Forwarded \\Draft)', '"12-Nov-2026 09:30:00 +0000"', raw]]);
    expect(answers[2]).toMatchObject({ typ: 'OK' });
    expect(textOf(answers[2])).toBe(`[APPENDUID ${inbox.UIDVALIDITY} ${inbox.UIDNEXT}] Append completed.`);
    const fetched = await imaplib(port, [login(MAILBOX), ['select', 'INBOX'], ['uid', 'FETCH', String(inbox.UIDNEXT), '(FLAGS INTERNALDATE BODY.PEEK[])']]);
    const [head, body] = (fetched[3]!.data as Array<[string, string]>)[0]!;
    expect(latin1(body).equals(latin1(raw))).toBe(true);
    expect(head).toContain('INTERNALDATE "12-Nov-2026 09:30:00 +0000"');
    expect(head).toMatch(/FLAGS \(\\Flagged \\Seen work\)/);
    const listed = (await folderList(MAILBOX, 'inbox')).find((m) => m.subject === 'Appended here')!;
    expect(listed).toBeDefined();
    expect(await world.message(acme, listed.message_id)).toMatchObject({ folder: 'inbox', read: true, flagged: true, answered: false, labels: ['work'], created_at: '2026-11-12T09:30:00.000Z' });
    expect((await rawOf(acme, listed.message_id)).equals(latin1(raw))).toBe(true);
  });

  it('an APPEND to Sent of a message already there (sent through the API, or appended) answers with that copy and stores nothing', async () => {
    const sent = await world.h.app.inject({ method: 'POST', url: '/send', headers: bearer(acme.apiKey), payload: { from_mailbox: MAILBOX, to: 'friend@peer.test', subject: 'Sent once', body: 'Hello once.' } });
    expect(sent.statusCode).toBeLessThan(300);
    const id = sent.json<{ message_id: string }>().message_id;
    const raw = (await rawOf(acme, id)).toString('latin1');
    const uid = await uidOf(MAILBOX, 'Sent', 'Sent once');
    const before = await status(MAILBOX, 'Sent');
    const answers = await imaplib(port, [login(MAILBOX), ['append', 'Sent', '(\\Seen)', null, raw]]);
    expect(textOf(answers[2])).toBe(`[APPENDUID ${before.UIDVALIDITY} ${uid}] Append completed.`);
    expect((await status(MAILBOX, 'Sent')).MESSAGES).toBe(before.MESSAGES);
    expect((await folderList(MAILBOX, 'sent')).filter((m) => m.subject === 'Sent once')).toHaveLength(1);

    // A message new to Sent is stored once, however often it is appended.
    const fresh = message('Sent by a client', 'client-sent-1@client.test');
    const first = await imaplib(port, [login(MAILBOX), ['append', 'Sent', '(\\Seen)', null, fresh], ['append', 'Sent', '(\\Seen)', null, fresh]]);
    expect(textOf(first[2])).toBe(`[APPENDUID ${before.UIDVALIDITY} ${before.UIDNEXT}] Append completed.`);
    expect(textOf(first[3])).toBe(textOf(first[2]));
    expect((await status(MAILBOX, 'Sent')).MESSAGES).toBe(before.MESSAGES + 1);
    expect((await folderList(MAILBOX, 'sent')).find((m) => m.subject === 'Sent by a client')).toMatchObject({ direction: 'outbound', read: true });
    // Outside Sent the same message is stored again (a client's copy in another folder is its own message).
    const inbox = await imaplib(port, [login(MAILBOX), ['append', 'Archive', null, null, fresh]]);
    expect(inbox[2]).toMatchObject({ typ: 'OK' });
    expect((await folderList(MAILBOX, 'archive')).filter((m) => m.subject === 'Sent by a client')).toHaveLength(1);
  });

  it('over the storage quota APPEND and COPY answer NO [OVERQUOTA] and store nothing; MOVE, which adds no bytes, still works', async () => {
    await deliver(FULL, 'Fills the quota');
    const bytes = await storedBytes(full);
    await world.h.services.quotas.set(full.workspaceId, 'stored_bytes', String(bytes));
    try {
      const answers = await imaplib(port, [
        login(FULL),
        ['append', 'INBOX', null, null, message('One too many', 'one-too-many@client.test')],
        ['select', 'INBOX'],
        ['raw', 'UID COPY 1:* Archive'],
        ['raw', 'UID MOVE 1:* Archive'],
      ]);
      expect(answers[2]).toMatchObject({ typ: 'NO' });
      expect(textOf(answers[2])).toMatch(/^\[OVERQUOTA\]/);
      expect(answers[4]!.typ).toMatch(/^NO \[OVERQUOTA\]/);
      expect(answers[5]!.typ).toBe('OK Move completed.');
      expect(await storedBytes(full)).toBe(bytes);
      expect((await folderList(FULL, 'archive')).map((m) => m.subject)).toEqual(['Fills the quota']);
      expect(await folderList(FULL, 'inbox')).toEqual([]);
    } finally {
      await world.h.services.quotas.set(full.workspaceId, 'stored_bytes', 'default');
    }
  });

  it('works with imapflow: append, copy and move answer with the UIDs they made', async () => {
    const client = new ImapFlow({ host: '127.0.0.1', port, secure: false, auth: { user: MAILBOX, pass: passwords.get(MAILBOX)! }, logger: false });
    await client.connect();
    try {
      const appended = await client.append('INBOX', message('Through imapflow', 'imapflow-1@client.test'), ['\\Flagged'], new Date('2026-11-02T08:00:00Z'));
      const uid = appended ? appended.uid : undefined;
      if (!uid) throw new Error(`APPEND gave no UID: ${JSON.stringify(appended)}`);
      await client.mailboxOpen('INBOX');
      const copied = await client.messageCopy(String(uid), 'Archive', { uid: true });
      expect(copied && copied.uidMap?.size).toBe(1);
      const moved = await client.messageMove(String(uid), 'Trash', { uid: true });
      expect(moved && moved.uidMap?.get(uid)).toBeGreaterThan(0);
    } finally {
      await client.logout();
    }
    const archived = (await folderList(MAILBOX, 'archive')).find((m) => m.subject === 'Through imapflow');
    const trashed = (await folderList(MAILBOX, 'trash')).find((m) => m.subject === 'Through imapflow');
    expect(archived).toMatchObject({ flagged: true });
    expect(trashed).toMatchObject({ flagged: true, created_at: '2026-11-02T08:00:00.000Z' });
    expect(archived!.thread_id).toBe(trashed!.thread_id);
    expect((await folderList(MAILBOX, 'inbox')).some((m) => m.subject === 'Through imapflow')).toBe(false);
  });

  it("never touches another workspace's mailbox", async () => {
    const theirs = await deliver(OTHER, 'Secret of other');
    const bytes = await storedBytes(other);
    const view = await world.message(other, theirs);
    const answers = await imaplib(port, [login(MAILBOX), ['select', 'INBOX'], ['raw', 'UID COPY 1:* Archive'], ['raw', 'UID MOVE 1:* Spam'], ['append', 'INBOX', null, null, message('Secret of other', 'secret-of-other@sender.test')]]);
    expect(answers[3]!.typ).toMatch(/^OK/);
    expect(answers[4]!.typ).toMatch(/^OK/);
    expect(answers[5]).toMatchObject({ typ: 'OK' });
    expect(await world.message(other, theirs)).toEqual(view);
    expect(await storedBytes(other)).toBe(bytes);
    expect((await folderList(OTHER, 'inbox')).map((m) => m.message_id)).toEqual([theirs]);
    for (const folder of ['Archive', 'Spam', 'Sent', 'Trash']) expect((await status(OTHER, folder)).MESSAGES, folder).toBe(0);
    // The same Message-ID in another workspace's Sent is not this mailbox's copy.
    const sent = await imaplib(port, [login(OTHER), ['append', 'Sent', null, null, message('Sent once', 'client-sent-1@client.test')]]);
    expect(sent[2]).toMatchObject({ typ: 'OK' });
    expect((await status(OTHER, 'Sent')).MESSAGES).toBe(1);
  });
});

import { beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/lib/logger.js';
import { createImapServer } from '../src/transports/imap/server.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, session } from './helpers/harness.js';
import { ImapLines } from './helpers/imap-lines.js';
import { imaplib, latin1, type Answer, type Step } from './helpers/imaplib.js';
import { mailWorld, type MessageView, type WorldTenant } from './helpers/world.js';

// IMAP's Drafts mailbox shows the drafts API's drafts, read and write: one store of drafts, two views of it.

const MAILBOX = 'drafter@mailroom.localhost';
const OTHER = 'other-drafter@mailroom.localhost';
/** The IDLE server polls only every 10 minutes: what an IDLE session hears came by the mail signal. */
const NO_POLL_MS = 600_000;

interface Draft {
  draft_id: string;
  mailbox: string;
  to: string[];
  cc: string[];
  bcc: string[];
  subject: string;
  body: string;
  html: string | null;
  in_reply_to: string | null;
  attachments: Array<{ filename: string; content_type: string; size: number }>;
}

const textOf = (a: Answer | undefined) => (Array.isArray(a?.data) ? (a.data as unknown[]).map((d) => (Array.isArray(d) ? d.join(' ') : String(d))).join('\n') : String(a?.data));

/** A draft as a mail client saves it: text, a file, Bcc, and a reply to `inReplyTo`. */
function mimeDraft(subject: string, inReplyTo = 'nobody@client.test'): string {
  return [
    `From: Drafter <${MAILBOX}>`,
    'To: Bob <bob@peer.test>, carol@peer.test',
    'Cc: dave@peer.test',
    'Bcc: eve@peer.test',
    `Subject: ${subject}`,
    `In-Reply-To: <${inReplyTo}>`,
    `Message-ID: <${subject.replace(/\W/g, '')}.${Date.now()}@client.test>`,
    'Date: Sun, 01 Nov 2026 09:30:00 +0000',
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="b1"',
    '',
    '--b1',
    'Content-Type: text/plain; charset=utf-8',
    '',
    'Half written.',
    '--b1',
    'Content-Type: text/plain; name="notes.txt"',
    'Content-Disposition: attachment; filename="notes.txt"',
    'Content-Transfer-Encoding: base64',
    '',
    Buffer.from('file bytes\n').toString('base64'),
    '--b1--',
    '',
  ].join('\r\n');
}

describe(`IMAP Drafts over the drafts API (${TEST_DIALECT})`, { timeout: 240_000 }, () => {
  const world = mailWorld({ env: { MAILROOM_ALLOW_PLAINTEXT_AUTH: 'loopback' } });
  let acme: WorldTenant;
  let other: WorldTenant;
  const passwords = new Map<string, string>();
  let port: number;
  const clients: ImapLines[] = [];

  const tenantOf = (address: string) => (address === OTHER ? other : acme);
  const login = (address: string): Step => ['login', address, passwords.get(address)!];
  const api = async (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, address = MAILBOX, payload?: Record<string, unknown>) => {
    const token = await world.ownerSession(tenantOf(address));
    return world.h.app.inject({ method, url: `/app/api${url}`, headers: session(token), ...(payload ? { payload } : {}) });
  };
  const drafts = async (address = MAILBOX): Promise<Draft[]> => {
    const res = await api('GET', `/drafts?mailbox=${encodeURIComponent(address)}&limit=200`, address);
    expect(res.statusCode, res.body).toBe(200);
    return res.json<{ drafts: Draft[] }>().drafts;
  };
  const status = async (address: string): Promise<Record<'MESSAGES' | 'UIDNEXT' | 'UIDVALIDITY', number>> => {
    const answers = await imaplib(port, [login(address), ['raw', 'STATUS Drafts (MESSAGES UIDNEXT UIDVALIDITY)']]);
    const line = (answers[2]!.data as string[])[0]!;
    const items = line.slice(line.indexOf('(') + 1, -1).split(' ');
    const out: Record<string, number> = {};
    for (let i = 0; i < items.length; i += 2) out[items[i]!] = Number(items[i + 1]);
    return out;
  };
  /** UIDs in Drafts whose Subject holds `subject`. */
  const uidsOf = async (address: string, subject: string): Promise<number[]> => {
    const answers = await imaplib(port, [login(address), ['select', 'Drafts'], ['uid', 'SEARCH', 'SUBJECT', `"${subject}"`]]);
    return String((answers[3]!.data as string[])[0]).trim().split(' ').filter(Boolean).map(Number);
  };
  const storedBytes = async (tenant: WorldTenant) => (await world.h.services.quotas.usageOf(tenant.workspaceId)).usage.stored_bytes;
  const loggedIn = async (address: string): Promise<ImapLines> => {
    const client = await ImapLines.open(port);
    clients.push(client);
    expect((await client.command(`LOGIN ${address} "${passwords.get(address)!}"`)).at(-1)).toMatch(/^t\d+ OK/);
    return client;
  };
  const exists = (lines: string[]): number => Number(lines.find((l) => / EXISTS$/.test(l))!.split(' ')[1]);

  beforeAll(async () => {
    acme = await world.tenant('Acme', [MAILBOX]);
    other = await world.tenant('Other', [OTHER]);
    for (const [tenant, address] of [[acme, MAILBOX], [other, OTHER]] as const) passwords.set(address, (await world.appPassword(tenant, address, 'drafts')).password);
    const server = createImapServer({ access: world.h.services.imapAccess, logger: createLogger('silent'), appendLimit: 1024 * 1024, maxClients: 20, maxClientsPerIp: 20, allowPlaintextAuth: 'loopback', tls: null, idlePollMs: NO_POLL_MS });
    port = await world.own(server).listen('127.0.0.1', 0);
    world.own({ close: () => clients.forEach((c) => c.close()) });
  });

  it('APPEND to Drafts makes a draft: the API lists its fields and files, FETCH BODY[] gives the exact bytes under the APPENDUID', async () => {
    // The message the draft answers, delivered by SMTP.
    await world.h.sendRaw(`From: <bob@peer.test>\r\nTo: <${MAILBOX}>\r\nSubject: Question\r\nMessage-ID: <question-1@peer.test>\r\n\r\nWell?\r\n`, { from: 'bob@peer.test', to: [MAILBOX] });
    const inbox = await world.h.app.inject({ method: 'GET', url: `/inbox?mailbox=${encodeURIComponent(MAILBOX)}&limit=50`, headers: bearer(acme.apiKey) });
    const question = inbox.json<{ messages: MessageView[] }>().messages.find((m) => m.subject === 'Question')!;
    const raw = mimeDraft('Saved by a client', 'question-1@peer.test');
    const before = await status(MAILBOX);
    const bytes = await storedBytes(acme);
    const stats = (await world.h.app.inject({ method: 'GET', url: '/stats', headers: bearer(acme.apiKey) })).json<{ messages: number; folders: Record<string, unknown> }>();
    const answers = await imaplib(port, [login(MAILBOX), ['append', 'Drafts', '(\\Seen)', null, raw]]);
    expect(answers[2]).toMatchObject({ typ: 'OK' });
    expect(textOf(answers[2])).toBe(`[APPENDUID ${before.UIDVALIDITY} ${before.UIDNEXT}] Append completed.`);

    const draft = (await drafts()).find((d) => d.subject === 'Saved by a client')!;
    expect(draft).toMatchObject({
      mailbox: MAILBOX,
      to: ['bob@peer.test', 'carol@peer.test'],
      cc: ['dave@peer.test'],
      bcc: ['eve@peer.test'],
      body: expect.stringMatching(/^Half written\.\r?\n?$/) as unknown,
      html: null,
      in_reply_to: question.message_id,
    });
    expect(draft.attachments).toEqual([expect.objectContaining({ filename: 'notes.txt', content_type: 'text/plain', size: 11 })]);

    const fetched = await imaplib(port, [login(MAILBOX), ['select', 'Drafts'], ['uid', 'FETCH', String(before.UIDNEXT), '(FLAGS RFC822.SIZE BODY.PEEK[])']]);
    const [head, body] = (fetched[3]!.data as Array<[string, string]>)[0]!;
    expect(latin1(body).equals(latin1(raw))).toBe(true);
    expect(head).toMatch(/FLAGS \(\\Seen \\Draft\)/);
    expect(head).toContain(`RFC822.SIZE ${raw.length}`);
    expect(await status(MAILBOX)).toMatchObject({ MESSAGES: before.MESSAGES + 1, UIDNEXT: before.UIDNEXT + 1 });
    // The source counts as stored bytes; the draft is no message of the messages API.
    expect(await storedBytes(acme)).toBe(bytes + raw.length);
    const after = (await world.h.app.inject({ method: 'GET', url: '/stats', headers: bearer(acme.apiKey) })).json<{ messages: number; folders: Record<string, unknown> }>();
    expect(after.messages).toBe(stats.messages);
    expect(Object.keys(after.folders)).not.toContain('drafts');
  });

  it('a draft created, changed, deleted or sent through the API appears, takes a new UID, disappears; IDLE on Drafts hears each', async () => {
    const client = await loggedIn(MAILBOX);
    const count = exists(await client.command('SELECT Drafts'));
    client.send('i1 IDLE');
    await client.waitFor(/^\+ idling/);
    const made = await api('POST', '/drafts', MAILBOX, { mailbox: MAILBOX, to: ['bob@peer.test'], bcc: 'eve@peer.test', subject: 'From the API', body: 'First words.' });
    expect(made.statusCode, made.body).toBe(201);
    const id = made.json<Draft>().draft_id;
    await client.waitFor(new RegExp(`^\\* ${count + 1} EXISTS$`));
    client.send('DONE');
    await client.waitFor(/^i1 OK/);
    const first = await client.command(`FETCH ${count + 1} (UID FLAGS BODY.PEEK[])`);
    const firstUid = Number(/UID (\d+)/.exec(first[0]!)![1]);
    expect(first[0]).toMatch(/FLAGS \(\\Draft\)/);
    const source = first.join('\n');
    for (const piece of ['Subject: From the API', 'To: bob@peer.test', 'Bcc: eve@peer.test', 'First words.']) expect(source).toContain(piece);

    client.send('i2 IDLE');
    await client.waitFor(/^\+ idling/);
    expect((await api('PATCH', `/drafts/${id}`, MAILBOX, { subject: 'Changed by the API' })).statusCode).toBe(200);
    await client.waitFor(new RegExp(`^\\* ${count + 1} EXPUNGE$`));
    await client.waitFor(new RegExp(`^\\* ${count + 1} EXISTS$`));
    client.send('DONE');
    await client.waitFor(/^i2 OK/);
    const second = await client.command(`FETCH ${count + 1} (UID BODY.PEEK[HEADER.FIELDS (SUBJECT)])`);
    expect(Number(/UID (\d+)/.exec(second[0]!)![1])).toBeGreaterThan(firstUid);
    expect(second.join('\n')).toContain('Subject: Changed by the API');

    client.send('i3 IDLE');
    await client.waitFor(/^\+ idling/);
    expect((await api('DELETE', `/drafts/${id}`)).statusCode).toBe(200);
    await client.waitFor(new RegExp(`^\\* ${count + 1} EXPUNGE$`));
    const sendable = (await api('POST', '/drafts', MAILBOX, { mailbox: MAILBOX, to: 'bob@peer.test', subject: 'Sent from a draft', body: 'Off it goes.' })).json<Draft>();
    await client.waitFor(new RegExp(`^\\* ${count + 1} EXISTS$`));
    const sent = await api('POST', `/drafts/${sendable.draft_id}/send`);
    expect(sent.statusCode, sent.body).toBeLessThan(300);
    await client.waitFor(new RegExp(`^\\* ${count + 1} EXPUNGE$`));
    client.send('DONE');
    await client.waitFor(/^i3 OK/);
    expect(await uidsOf(MAILBOX, 'API')).toEqual([]);
  });

  it('the Thunderbird replace (APPEND the new, STORE \\Deleted on the old, EXPUNGE) leaves exactly the new draft', async () => {
    const old = await imaplib(port, [login(MAILBOX), ['append', 'Drafts', null, null, mimeDraft('Replace me v1')]]);
    const oldUid = Number(/APPENDUID \d+ (\d+)/.exec(textOf(old[2]))![1]);
    const answers = await imaplib(port, [
      login(MAILBOX),
      ['select', 'Drafts'],
      ['append', 'Drafts', '(\\Seen)', null, mimeDraft('Replace me v2')],
      ['uid', 'STORE', String(oldUid), '+FLAGS', '(\\Deleted)'],
      ['expunge'],
    ]);
    expect(answers.slice(3).map((a) => a.typ)).toEqual(['OK', 'OK', 'OK']);
    expect((await drafts()).filter((d) => d.subject.startsWith('Replace me')).map((d) => d.subject)).toEqual(['Replace me v2']);
    expect(await uidsOf(MAILBOX, 'Replace me')).toEqual([Number(/APPENDUID \d+ (\d+)/.exec(textOf(answers[3]))![1])]);
  });

  it('MOVE of a draft to Archive stores its bytes as a message there and removes the draft', async () => {
    const raw = mimeDraft('Move me out');
    const appended = await imaplib(port, [login(MAILBOX), ['append', 'Drafts', null, null, raw]]);
    const uid = Number(/APPENDUID \d+ (\d+)/.exec(textOf(appended[2]))![1]);
    const moved = await imaplib(port, [login(MAILBOX), ['select', 'Drafts'], ['raw', `UID MOVE ${uid} Archive`]]);
    expect(moved[3]!.typ).toBe('OK Move completed.');
    expect((moved[3]!.data as string[]).join('\n')).toMatch(/\[COPYUID \d+ \d+ \d+\]/);
    expect((await drafts()).filter((d) => d.subject === 'Move me out')).toEqual([]);
    expect(await uidsOf(MAILBOX, 'Move me out')).toEqual([]);
    const archive = await world.h.app.inject({ method: 'GET', url: `/inbox?mailbox=${encodeURIComponent(MAILBOX)}&folder=archive&limit=50`, headers: bearer(acme.apiKey) });
    const message = archive.json<{ messages: MessageView[] }>().messages.find((m) => m.subject === 'Move me out')!;
    expect(message).toBeDefined();
    const stored = (await world.h.app.inject({ method: 'GET', url: `/messages/${message.message_id}/raw`, headers: bearer(acme.apiKey) })).rawPayload;
    expect(stored.equals(latin1(raw))).toBe(true);
  });

  it('COPY from INBOX into Drafts makes a draft of the message (its bytes kept), and the message stays', async () => {
    const raw = `From: <bob@peer.test>\r\nTo: <${MAILBOX}>\r\nSubject: Copy me into Drafts\r\nMessage-ID: <copy-into-drafts@peer.test>\r\n\r\nReuse me.\r\n`;
    await world.h.sendRaw(raw, { from: 'bob@peer.test', to: [MAILBOX] });
    const inbox = await imaplib(port, [login(MAILBOX), ['select', 'INBOX'], ['uid', 'SEARCH', 'SUBJECT', '"Copy me into Drafts"']]);
    const uid = String((inbox[3]!.data as string[])[0]).trim();
    const before = await status(MAILBOX);
    const copied = await imaplib(port, [login(MAILBOX), ['select', 'INBOX'], ['raw', `UID COPY ${uid} Drafts`]]);
    expect(copied[3]!.typ).toBe(`OK [COPYUID ${before.UIDVALIDITY} ${uid} ${before.UIDNEXT}] Copy completed.`);
    expect((await drafts()).filter((d) => d.subject === 'Copy me into Drafts')).toHaveLength(1);
    const fetched = await imaplib(port, [login(MAILBOX), ['select', 'Drafts'], ['uid', 'FETCH', String(before.UIDNEXT), '(BODY.PEEK[])']]);
    const stored = (await world.h.app.inject({ method: 'GET', url: `/inbox?mailbox=${encodeURIComponent(MAILBOX)}&limit=50`, headers: bearer(acme.apiKey) })).json<{ messages: MessageView[] }>().messages.find((m) => m.subject === 'Copy me into Drafts')!;
    const original = (await world.h.app.inject({ method: 'GET', url: `/messages/${stored.message_id}/raw`, headers: bearer(acme.apiKey) })).rawPayload;
    expect(latin1((fetched[3]!.data as Array<[string, string]>)[0]![1]).equals(original)).toBe(true);
  });

  it("another workspace's drafts are never visible, through IMAP or the API", async () => {
    expect((await api('POST', '/drafts', OTHER, { mailbox: OTHER, subject: 'Secret of other', body: 'Theirs.' })).statusCode).toBe(201);
    const appended = await imaplib(port, [login(OTHER), ['append', 'Drafts', null, null, mimeDraft('Secret appended by other')]]);
    expect(appended[2]).toMatchObject({ typ: 'OK' });
    expect(await uidsOf(MAILBOX, 'Secret')).toEqual([]);
    const all = await imaplib(port, [login(MAILBOX), ['select', 'Drafts'], ['uid', 'FETCH', '1:*', '(BODY.PEEK[HEADER.FIELDS (SUBJECT)])']]);
    expect(JSON.stringify(all[3]!.data)).not.toContain('Secret');
    expect((await drafts()).map((d) => d.subject).filter((s) => s.includes('Secret'))).toEqual([]);
    // The other workspace sees its own two.
    expect((await uidsOf(OTHER, 'Secret')).length).toBe(2);
    expect((await drafts(OTHER)).map((d) => d.subject).sort()).toEqual(['Secret appended by other', 'Secret of other']);
  });

  it("APPEND's date is the draft's INTERNALDATE, and a MOVE keeps a message's INTERNALDATE into Drafts", async () => {
    const appended = await imaplib(port, [login(MAILBOX), ['append', 'Drafts', null, '"14-Jul-2025 08:15:00 +0200"', mimeDraft('Dated draft')]]);
    const uid = Number(/APPENDUID \d+ (\d+)/.exec(textOf(appended[2]))![1]);
    const fetched = await imaplib(port, [login(MAILBOX), ['select', 'Drafts'], ['uid', 'FETCH', String(uid), '(INTERNALDATE)']]);
    expect(textOf(fetched[3])).toContain('INTERNALDATE "14-Jul-2025 06:15:00 +0000"');
  });

  it('MOVE of a draft into Sent that the send path already stored (same Message-ID) keeps one copy there', async () => {
    const raw = mimeDraft('Sent twice?');
    const messageId = /Message-ID: <([^>]+)>/.exec(raw)![1]!;
    // The copy submission stored: the same Message-ID already in Sent.
    const first = await imaplib(port, [login(MAILBOX), ['append', 'Sent', '(\\Seen)', null, raw]]);
    const sentUid = Number(/APPENDUID \d+ (\d+)/.exec(textOf(first[2]))![1]);
    const appended = await imaplib(port, [login(MAILBOX), ['append', 'Drafts', null, null, raw]]);
    const uid = Number(/APPENDUID \d+ (\d+)/.exec(textOf(appended[2]))![1]);
    const moved = await imaplib(port, [login(MAILBOX), ['select', 'Drafts'], ['raw', `UID MOVE ${uid} Sent`]]);
    expect((moved[3]!.data as string[]).join('\n')).toMatch(new RegExp(`\\[COPYUID \\d+ ${uid} ${sentUid}\\]`));
    const inSent = await imaplib(port, [login(MAILBOX), ['select', 'Sent'], ['uid', 'SEARCH', 'HEADER', 'Message-ID', `"${messageId}"`]]);
    expect(String((inSent[3]!.data as string[])[0]).trim()).toBe(String(sentUid));
    expect(await uidsOf(MAILBOX, 'Sent twice?')).toEqual([]);
  });

  it('a MOVE out of Drafts racing an API change of that draft loses neither: the change stays a draft or the move keeps the old text', async () => {
    for (let i = 0; i < 8; i++) {
      const made = (await api('POST', '/drafts', MAILBOX, { mailbox: MAILBOX, to: 'bob@peer.test', subject: `Race ${i} v1`, body: 'First.' })).json<Draft>();
      const [uid] = await uidsOf(MAILBOX, `Race ${i} v1`);
      const [moved, changed] = await Promise.all([
        imaplib(port, [login(MAILBOX), ['select', 'Drafts'], ['raw', `UID MOVE ${uid} Archive`]]),
        api('PATCH', `/drafts/${made.draft_id}`, MAILBOX, { subject: `Race ${i} v2` }),
      ]);
      expect(moved[3]!.typ).toMatch(/^OK/);
      const subjects = (await drafts()).map((d) => d.subject);
      const archive = await world.h.app.inject({ method: 'GET', url: `/inbox?mailbox=${encodeURIComponent(MAILBOX)}&folder=archive&limit=100`, headers: bearer(acme.apiKey) });
      const archived = archive.json<{ messages: MessageView[] }>().messages.map((m) => m.subject);
      if (changed.statusCode === 200) {
        // The change was accepted: it is a draft still (the MOVE took the old version, or nothing).
        expect(subjects).toContain(`Race ${i} v2`);
      } else {
        // The MOVE came first: the change is refused as for any removed draft, and the moved text is in Archive.
        expect(changed.statusCode).toBe(404);
        expect(archived).toContain(`Race ${i} v1`);
      }
      expect(subjects.includes(`Race ${i} v2`) || archived.includes(`Race ${i} v1`)).toBe(true);
    }
  });
});

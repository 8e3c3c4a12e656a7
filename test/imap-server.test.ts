import { ImapFlow } from 'imapflow';
import { beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/lib/logger.js';
import { createImapServer, type ImapServer } from '../src/transports/imap/server.js';
import { TEST_DIALECT } from './helpers/database.js';
import { imaplib, latin1, type Step } from './helpers/imaplib.js';
import { bearer, login, session } from './helpers/harness.js';
import { mailWorld, type WorldTenant } from './helpers/world.js';


const MAILBOX = 'imap-user@mailroom.localhost';
const OTHER = 'imap-other@mailroom.localhost';

describe(`IMAP server (${TEST_DIALECT})`, () => {
  const world = mailWorld({ peer: false, env: { MAILROOM_ALLOW_PLAINTEXT_AUTH: 'loopback', MAILROOM_LOGIN_FAILURES_PER_ADDRESS: '3' } });
  let acme: WorldTenant;
  let other: WorldTenant;
  let password: string;
  let otherPassword: string;
  let port: number;
  let strictPort: number;

  const appPassword = (tenant: WorldTenant, mailbox: string) => world.appPassword(tenant, mailbox, 'imaplib');
  const server = async (allowPlaintextAuth: 'never' | 'loopback'): Promise<number> => {
    const s: ImapServer = createImapServer({ access: world.h.services.imapAccess, logger: createLogger('silent'), appendLimit: 1024 * 1024, maxClients: 20, maxClientsPerIp: 10, allowPlaintextAuth, tls: null });
    world.own(s);
    return s.listen('127.0.0.1', 0);
  };
  const deliver = async (to: string, subject: string, body = 'Hello from SMTP.\r\n'): Promise<string> => {
    const raw = `From: Alice <alice@sender.test>\r\nTo: <${to}>\r\nSubject: ${subject}\r\nMessage-ID: <${subject.replace(/\W/g, '')}@sender.test>\r\nDate: Fri, 20 Nov 2026 10:00:00 +0000\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n${body}`;
    await world.h.sendRaw(raw, { from: 'alice@sender.test', to: [to] });
    const list = await world.h.app.inject({ method: 'GET', url: `/inbox?mailbox=${encodeURIComponent(to)}`, headers: bearer(to === OTHER ? other.apiKey : acme.apiKey) });
    const found = list.json<{ messages: Array<{ message_id: string; subject: string }> }>().messages.find((m) => m.subject === subject);
    if (!found) throw new Error(`message ${subject} was not stored`);
    return found.message_id;
  };
  const api = async (tenant: WorldTenant, id: string) => world.message(tenant, id);

  beforeAll(async () => {
    acme = await world.tenant('Acme', [MAILBOX]);
    other = await world.tenant('Other', [OTHER]);
    password = (await appPassword(acme, MAILBOX)).password;
    otherPassword = (await appPassword(other, OTHER)).password;
    port = await server('loopback');
    strictPort = await server('never');
  });

  it('greets with its capabilities and logs in with the mailbox address and an app password (LOGIN, AUTHENTICATE PLAIN)', async () => {
    const [hello, ok, caps] = await imaplib(port, [['login', MAILBOX, password], ['capability']]);
    expect(hello!.welcome).toMatch(/^\* OK \[CAPABILITY IMAP4rev1 .*AUTH=PLAIN.*\] Mailroom ready\.$/);
    expect(ok).toMatchObject({ typ: 'OK' });
    expect(String((caps!.data as string[])[0])).toContain('CONDSTORE');
    const [, plain] = await imaplib(port, [['plain', MAILBOX, password]]);
    expect(plain).toMatchObject({ typ: 'OK' });
    const [, wrongUser] = await imaplib(port, [['login', OTHER, password]]);
    expect(wrongUser!.error).toContain('[AUTHENTICATIONFAILED]');
  });

  it('answers throttled logins NO [UNAVAILABLE], even with the right password', async () => {
    const address = 'imap-throttled@mailroom.localhost';
    await world.mailbox(acme, address);
    const made = await appPassword(acme, address);
    const answers = await imaplib(port, [['login', address, 'wrong'], ['login', address, 'wrong'], ['login', address, 'wrong'], ['login', address, made.password]]);
    expect(answers.slice(1, 4).map((a) => a.error)).toEqual([expect.stringContaining('[AUTHENTICATIONFAILED]'), expect.stringContaining('[AUTHENTICATIONFAILED]'), expect.stringContaining('[AUTHENTICATIONFAILED]')]);
    expect(answers[4]!.error).toContain('[UNAVAILABLE]');
  });

  it('refuses LOGIN without TLS unless plaintext logins are allowed on loopback, and says LOGINDISABLED', async () => {
    const [hello, refused, plain] = await imaplib(strictPort, [['raw', `LOGIN ${MAILBOX} "${password}"`], ['raw', `AUTHENTICATE PLAIN ${Buffer.from(`\0${MAILBOX}\0${password}`).toString('base64')}`]]);
    expect(hello!.capabilities).toContain('LOGINDISABLED');
    expect(hello!.capabilities).not.toContain('AUTH=PLAIN');
    expect(refused!.typ).toMatch(/^NO \[PRIVACYREQUIRED\]/);
    expect(plain!.typ).toMatch(/^NO \[PRIVACYREQUIRED\]/);
  });

  it('answers unknown, malformed and out-of-state commands with BAD and keeps going', async () => {
    const answers = await imaplib(port, [['raw', 'FROBNICATE'], ['raw', 'SELECT'], ['raw', 'FETCH 1 FLAGS'], ['login', MAILBOX, password], ['raw', 'FETCH 1 FLAGS'], ['raw', 'SELECT INBOX'], ['raw', 'FETCH x FLAGS'], ['raw', 'NOOP']]);
    expect(answers[1]!.typ).toMatch(/^BAD/);
    expect(answers[2]!.typ).toMatch(/^BAD/);
    expect(answers[3]!.typ).toMatch(/^BAD/);
    expect(answers[5]!.typ).toMatch(/^BAD/);
    expect(answers[7]!.typ).toMatch(/^BAD/);
    expect(answers[8]!.typ).toMatch(/^OK/);
  });

  it('lists the six folders with their special-use flags and selects one with its data', async () => {
    await deliver(MAILBOX, 'List and select');
    const [, , all, special, selected, status] = await imaplib(port, [
      ['login', MAILBOX, password],
      ['raw', 'LIST "" "*"'],
      ['raw', 'LIST (SPECIAL-USE) "" "*"'],
      ['raw', 'SELECT INBOX'],
      ['raw', 'STATUS INBOX (MESSAGES UIDNEXT UIDVALIDITY UNSEEN HIGHESTMODSEQ SIZE)'],
    ]);
    expect(all!.data).toEqual([
      '* LIST (\\HasNoChildren) "/" INBOX',
      '* LIST (\\HasNoChildren \\Archive) "/" Archive',
      '* LIST (\\HasNoChildren \\Drafts) "/" Drafts',
      '* LIST (\\HasNoChildren \\Sent) "/" Sent',
      '* LIST (\\HasNoChildren \\Junk) "/" Spam',
      '* LIST (\\HasNoChildren \\Trash) "/" Trash',
    ]);
    expect(special!.data).toHaveLength(5);
    const lines = (selected!.data as string[]).join('\n');
    expect(lines).toMatch(/^\* FLAGS \(\\Answered \\Flagged \\Deleted \\Seen \\Draft/m);
    expect(lines).toMatch(/^\* \d+ EXISTS$/m);
    expect(lines).toMatch(/^\* OK \[UIDVALIDITY \d+\]/m);
    expect(lines).toMatch(/^\* OK \[UIDNEXT \d+\]/m);
    // HIGHESTMODSEQ only once CONDSTORE is enabled, as Dovecot answers.
    expect(lines).not.toMatch(/^\* OK \[HIGHESTMODSEQ \d+\]/m);
    expect(lines).toMatch(/^\* OK \[PERMANENTFLAGS \(.*\\\*\)\]/m);
    expect(selected!.typ).toMatch(/^OK \[READ-WRITE\]/);
    // STATUS HIGHESTMODSEQ turns CONDSTORE on: with INBOX selected, `* OK [HIGHESTMODSEQ n]` comes first.
    expect((status!.data as string[])[0]).toMatch(/^\* OK \[HIGHESTMODSEQ \d+\]/);
    expect((status!.data as string[]).at(-1)).toMatch(/^\* STATUS INBOX \(MESSAGES \d+ UIDNEXT \d+ UIDVALIDITY \d+ UNSEEN \d+ HIGHESTMODSEQ \d+ SIZE \d+\)$/);
  });

  it('FETCH BODY[] is the stored message byte for byte; PEEK leaves it unread, BODY[] marks it read as the API does', async () => {
    // 8-bit bytes and a backslash: the two forms PostgreSQL escapes when it sends a raw message as text.
    const id = await deliver(MAILBOX, 'Fetch me', 'Line one.\r\nLine two, with caf\u00e9 and a back\\slash.\r\n');
    const raw = (await world.h.app.inject({ method: 'GET', url: `/messages/${id}/raw`, headers: bearer(acme.apiKey) })).rawPayload;
    const answers = await imaplib(port, [
      ['login', MAILBOX, password],
      ['select', 'INBOX'],
      ['uid', 'SEARCH', 'SUBJECT', '"Fetch me"'],
    ]);
    const uid = String((answers[3]!.data as string[])[0]).trim();
    expect(uid).toMatch(/^\d+$/);
    const [, , , peek, , full] = await imaplib(port, [
      ['login', MAILBOX, password],
      ['select', 'INBOX'],
      ['uid', 'FETCH', uid, '(UID RFC822.SIZE FLAGS BODY.PEEK[] ENVELOPE BODYSTRUCTURE)'],
      ['uid', 'FETCH', uid, '(BODY.PEEK[HEADER.FIELDS (Subject)] BODY.PEEK[TEXT]<0.4>)'],
      ['uid', 'FETCH', uid, '(BODY[])'],
    ]);
    const peeked = peek!.data as Array<[string, string] | string>;
    const [first, body] = peeked[0] as [string, string];
    const head = first + String(peeked[1]);
    expect(latin1(body).equals(raw)).toBe(true);
    expect(head).toContain(`RFC822.SIZE ${raw.length}`);
    expect(head).toContain('ENVELOPE ("Fri, 20 Nov 2026 10:00:00 +0000" "Fetch me" (("Alice" NIL "alice" "sender.test"))');
    expect(head).toContain('BODYSTRUCTURE ("text" "plain" ("charset" "utf-8")');
    expect(head).not.toContain('\\Seen');
    expect(latin1((full!.data as Array<[string, string]>)[0]![1]).equals(raw)).toBe(true);
    const fetched = full!.data as [[string, string], string];
    expect(fetched[0][0] + fetched[1]).toContain('\\Seen');
    expect((await api(acme, id))!.read).toBe(true);
  });

  it('a session answering many large FETCHes waits for its socket without piling up listeners on it', async () => {
    await deliver(MAILBOX, 'Large body', `${'Some words of a long message body, line after line.'.padEnd(76, '.')}\r\n`.repeat(1500));
    // Each FETCH below writes more than the socket's buffer holds, so the session waits for it to drain every time.
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => {
      if (warning.name === 'MaxListenersExceededWarning') warnings.push(warning);
    };
    process.on('warning', onWarning);
    try {
      const fetches = Array.from({ length: 15 }, (): Step => ['uid', 'FETCH', '1:*', '(BODY.PEEK[])']);
      const answers = await imaplib(port, [['login', MAILBOX, password], ['select', 'INBOX'], ...fetches]);
      expect(answers.slice(3).map((a) => a.typ)).toEqual(fetches.map(() => 'OK'));
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings).toEqual([]);
  });

  it('STORE changes read, flagged, answered and labels as the API shows them; UNCHANGEDSINCE refuses a stale change', async () => {
    const id = await deliver(MAILBOX, 'Store on me');
    const [, , , found] = await imaplib(port, [['login', MAILBOX, password], ['select', 'INBOX'], ['uid', 'SEARCH', 'SUBJECT', '"Store on me"']]);
    const uid = String((found!.data as string[])[0]).trim();
    const answers = await imaplib(port, [
      ['login', MAILBOX, password],
      ['select', 'INBOX'],
      ['uid', 'STORE', uid, '+FLAGS', '(\\Seen \\Flagged \\Answered Work $Junk)'],
      ['uid', 'STORE', uid, '(UNCHANGEDSINCE 1) -FLAGS', '(\\Flagged)'],
      ['uid', 'FETCH', uid, '(FLAGS)'],
    ]);
    expect(String((answers[3]!.data as string[])[0])).toMatch(/FLAGS \(\\Answered \\Flagged \\Seen work\)/);
    expect(answers[4]).toMatchObject({ typ: 'OK' });
    expect(String((answers[5]!.data as string[])[0])).toContain('\\Flagged');
    const seen = await api(acme, id);
    expect(seen).toMatchObject({ read: true, flagged: true, answered: true, labels: ['work'] });
    await imaplib(port, [['login', MAILBOX, password], ['select', 'INBOX'], ['uid', 'STORE', uid, '-FLAGS', '(\\Seen Work)']]);
    expect(await api(acme, id)).toMatchObject({ read: false, labels: [] });
    // NIL where a flag goes is the keyword NIL (Dovecot's reading), so the label `nil`; not BAD.
    const nil = await imaplib(port, [['login', MAILBOX, password], ['select', 'INBOX'], ['uid', 'STORE', uid, '+FLAGS', 'NIL']]);
    expect(nil[2]).toMatchObject({ typ: 'OK' });
    expect(await api(acme, id)).toMatchObject({ labels: ['nil'] });
  });

  it('EXPUNGE removes \\Deleted messages through the delete path; the API then answers 404', async () => {
    const id = await deliver(MAILBOX, 'Expunge me');
    const [, , , found] = await imaplib(port, [['login', MAILBOX, password], ['select', 'INBOX'], ['uid', 'SEARCH', 'SUBJECT', '"Expunge me"']]);
    const uid = String((found!.data as string[])[0]).trim();
    const answers = await imaplib(port, [['login', MAILBOX, password], ['select', 'INBOX'], ['uid', 'STORE', uid, '+FLAGS', '(\\Deleted)'], ['expunge'], ['uid', 'SEARCH', 'ALL']]);
    expect(answers[4]).toMatchObject({ typ: 'OK' });
    expect((answers[4]!.data as string[]).length).toBe(1);
    expect(String((answers[5]!.data as string[])[0]).split(' ')).not.toContain(uid);
    expect(await api(acme, id)).toBeUndefined();
  });

  it("never shows another workspace's mailbox", async () => {
    await deliver(OTHER, 'Secret of other');
    const [, , , mine] = await imaplib(port, [['login', MAILBOX, password], ['select', 'INBOX'], ['search', null, 'SUBJECT', '"Secret of other"']]);
    expect(mine!.data).toEqual(['']);
    const [, , , all, fetchMe] = await imaplib(port, [['login', OTHER, otherPassword], ['select', 'INBOX'], ['search', null, 'ALL'], ['uid', 'SEARCH', 'SUBJECT', '"Fetch me"']]);
    expect(String((all!.data as string[])[0]).split(' ')).toHaveLength(1);
    expect(fetchMe!.data).toEqual(['']);
  });

  it('ends a session whose app password is revoked, at its next command', async () => {
    const made = await appPassword(acme, MAILBOX);
    const token = await login(world.h, acme.ownerEmail, acme.password);
    const sessions = world.h.services.appPasswords.sessions;
    const before = sessions.open();
    const run = imaplib(port, [['login', MAILBOX, made.password], ['select', 'INBOX'], ['wait_bye', 20]]);
    // Revoke once the session is logged in (followed by the credential watch), however slow the client starts.
    for (let i = 0; i < 300 && sessions.open() <= before; i++) await new Promise((r) => setTimeout(r, 50));
    expect(sessions.open()).toBeGreaterThan(before);
    const res = await world.h.app.inject({ method: 'DELETE', url: `/app/api/app-passwords/${made.id}`, headers: session(token) });
    expect(res.statusCode).toBeLessThan(300);
    const answers = await run;
    expect(answers[1]).toMatchObject({ typ: 'OK' });
    // The session ends at whichever command comes next (SELECT, or one of the NOOPs), with the reason.
    const last = answers.at(-1)!;
    expect(last.typ === 'BYE' || /revoked/.test(String(last.abort)), JSON.stringify(answers)).toBe(true);
  });

  it('works with imapflow: list, open, fetch the source, add a flag', async () => {
    const id = await deliver(MAILBOX, 'Through imapflow');
    const raw = (await world.h.app.inject({ method: 'GET', url: `/messages/${id}/raw`, headers: bearer(acme.apiKey) })).rawPayload;
    const client = new ImapFlow({ host: '127.0.0.1', port, secure: false, auth: { user: MAILBOX, pass: password }, logger: false });
    await client.connect();
    try {
      const folders = await client.list();
      expect(folders.map((f) => f.path).sort()).toEqual(['Archive', 'Drafts', 'INBOX', 'Sent', 'Spam', 'Trash']);
      expect(folders.find((f) => f.path === 'Spam')?.specialUse).toBe('\\Junk');
      const box = await client.mailboxOpen('INBOX');
      expect(box.exists).toBeGreaterThan(0);
      const found = await client.search({ subject: 'Through imapflow' }, { uid: true });
      expect(found).toHaveLength(1);
      const uid = (found as number[])[0]!;
      const message = await client.fetchOne(String(uid), { source: true, envelope: true, flags: true, bodyStructure: true }, { uid: true });
      expect(message && Buffer.from(message.source!).equals(raw)).toBe(true);
      expect(message && message.envelope?.subject).toBe('Through imapflow');
      await client.messageFlagsAdd(String(uid), ['\\Flagged', 'imapflow'], { uid: true });
      expect(await api(acme, id)).toMatchObject({ flagged: true, labels: ['imapflow'] });
    } finally {
      await client.logout();
    }
  });

  it('IDLE reports a message arriving and a flag set through the API within a second or two', async () => {
    const [, , , found] = await imaplib(port, [['login', MAILBOX, password], ['select', 'INBOX'], ['search', null, 'ALL']]);
    const listed = String((found!.data as string[])[0]).trim();
    const count = listed === '' ? 0 : listed.split(' ').length;
    const sessions = world.h.services.appPasswords.sessions;
    const before = sessions.open();
    const run = imaplib(port, [['login', MAILBOX, password], ['select', 'INBOX'], ['idle', 15, 'EXISTS'], ['idle', 15, 'FLAGS']]);
    // Once logged in, SELECT and IDLE follow at once; the arrival comes after them.
    for (let i = 0; i < 300 && sessions.open() <= before; i++) await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 1500));
    const id = await deliver(MAILBOX, 'Arrives while idling');
    await new Promise((r) => setTimeout(r, 2500));
    expect((await world.h.app.inject({ method: 'POST', url: `/messages/${id}/read`, headers: bearer(acme.apiKey), payload: { read: true } })).statusCode).toBe(200);
    const answers = await run;
    expect(answers[3]!.typ).toMatch(/^OK/);
    expect(answers[3]!.data).toContain(`* ${count + 1} EXISTS`);
    expect((answers[4]!.data as string[]).join('\n')).toMatch(new RegExp(`^\\* ${count + 1} FETCH \\(FLAGS \\(\\\\Seen\\)\\)$`, 'm'));
  });
});

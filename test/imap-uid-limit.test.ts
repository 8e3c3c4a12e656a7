import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/lib/logger.js';
import { createImapServer } from '../src/transports/imap/server.js';
import { TEST_DIALECT } from './helpers/database.js';
import { session } from './helpers/harness.js';
import { ImapLines } from './helpers/imap-lines.js';
import { mailWorld, type WorldTenant } from './helpers/world.js';

// UIDs are 32-bit in IMAP (RFC 9051's nz-number up to 4294967295); the store counts them in 64 bits. A folder whose
// counter is set near the limit in the database: mail still arrives over SMTP past it, and the folder is renumbered
// under a new UIDVALIDITY before any client sees a UID or UIDNEXT it cannot carry, with every message kept. A session
// whose UIDs changed under it is ended as Dovecot ends it; APPEND past the limit answers with the renumbered UID.

const BOX = 'limit@mailroom.localhost';
const LAST_UID = 4294967295;

describe(`IMAP UIDs stay below 2^32 (${TEST_DIALECT})`, () => {
  const world = mailWorld({ peer: false, env: { MAILROOM_ALLOW_PLAINTEXT_AUTH: 'loopback' } });
  let acme: WorldTenant;
  let password: string;
  let port: number;
  const clients: ImapLines[] = [];

  const db = () => world.h.services.database.db;
  const setUidNext = async (uidnext: number, folder = 'inbox') => {
    const updated = await db().updateTable('folder_counts').set({ uidnext }).where('workspace_id', '=', acme.workspaceId).where('folder', '=', folder).executeTakeFirst();
    expect(Number(updated.numUpdatedRows)).toBe(1);
  };
  const storedUids = async () =>
    (await db().selectFrom('messages').select(['uid', 'subject']).where('workspace_id', '=', acme.workspaceId).where('folder', '=', 'inbox').orderBy('uid').execute()).map((r) => [Number(r.uid), r.subject]);
  const deliver = (subject: string) =>
    world.h.sendRaw(`From: <sender@sender.test>\r\nTo: <${BOX}>\r\nSubject: ${subject}\r\nMessage-ID: <${subject}.${Date.now()}@sender.test>\r\n\r\nBody of ${subject}.\r\n`, { from: 'sender@sender.test', to: [BOX] });
  const loggedIn = async (): Promise<ImapLines> => {
    const client = await ImapLines.open(port);
    clients.push(client);
    expect((await client.command(`LOGIN ${BOX} "${password}"`)).at(-1)).toMatch(/^t\d+ OK/);
    return client;
  };
  const code = (lines: string[], name: string): number => Number(new RegExp(`\\[${name} (\\d+)\\]`).exec(lines.join('\n'))![1]);

  beforeAll(async () => {
    acme = await world.tenant('Acme', [BOX]);
    password = (await world.appPassword(acme, BOX, 'limit')).password;
    port = await world.own(createImapServer({ access: world.h.services.imapAccess, logger: createLogger('silent'), appendLimit: 1024 * 1024, maxClients: 20, maxClientsPerIp: 20, allowPlaintextAuth: 'loopback', tls: null })).listen('127.0.0.1', 0);
  });

  afterAll(() => {
    for (const c of clients) c.close();
  });

  it('keeps delivering past the limit, renumbers under a new UIDVALIDITY before a client sees it, loses nothing', async () => {
    await deliver('first');
    await deliver('second');
    await setUidNext(LAST_UID - 1);
    await deliver('third');
    const early = await loggedIn();
    const selected = await early.command('SELECT INBOX');
    const validity = code(selected, 'UIDVALIDITY');
    expect(code(selected, 'UIDNEXT')).toBe(LAST_UID);
    expect((await early.command('UID FETCH 1:* (UID)')).filter((l) => l.startsWith('* '))).toEqual(['* 1 FETCH (UID 1)', '* 2 FETCH (UID 2)', `* 3 FETCH (UID ${LAST_UID - 1})`]);

    // The last UID IMAP has, then one past it in the store: SMTP takes both.
    await deliver('fourth');
    await deliver('fifth');
    expect((await storedUids()).map(([uid]) => uid)).toEqual([1, 2, LAST_UID - 1, LAST_UID, LAST_UID + 1]);

    const late = await loggedIn();
    const status = (await late.command('STATUS INBOX (MESSAGES UIDNEXT UIDVALIDITY)')).join('\n');
    const renumbered = Number(/UIDVALIDITY (\d+)/.exec(status)![1]);
    expect(renumbered).toBeGreaterThan(validity);
    expect(status).toMatch(/MESSAGES 5 UIDNEXT 6 /);
    expect(await storedUids()).toEqual([[1, 'first'], [2, 'second'], [3, 'third'], [4, 'fourth'], [5, 'fifth']]);
    const again = await late.command('SELECT INBOX');
    expect(code(again, 'UIDVALIDITY')).toBe(renumbered);
    expect(code(again, 'UIDNEXT')).toBe(6);
    expect(again).toContain('* 5 EXISTS');

    // The early session held a UID that changed: it is ended, not shown the new numbers as the old messages.
    early.send('n1 NOOP');
    expect((await early.waitFor(/^\* BYE /)).at(-1)).toBe('* BYE Mailbox UIDVALIDITY changed');
  });

  it('answers an APPEND past the limit with its renumbered UID and the new UIDVALIDITY', async () => {
    await setUidNext(LAST_UID);
    const client = await loggedIn();
    const before = code(await client.command('SELECT INBOX'), 'UIDVALIDITY');
    const raw = `From: <writer@sender.test>\r\nSubject: appended\r\n\r\nAppended.\r\n`;
    const tag = client.nextTag();
    client.send(`${tag} APPEND INBOX {${raw.length}+}`);
    client.send(raw);
    const appended = (await client.waitFor(new RegExp(`^${tag} `))).at(-1)!;
    const m = /\[APPENDUID (\d+) (\d+)\]/.exec(appended)!;
    expect(Number(m[1])).toBeGreaterThan(before);
    expect(Number(m[2])).toBe(6);
    expect((await storedUids()).map(([uid]) => uid)).toEqual([1, 2, 3, 4, 5, 6]);
    // The session's own UIDs did not change: it goes on, and sees the message by its new UID.
    expect((await client.command('UID FETCH 6 (UID)')).filter((l) => l.startsWith('* '))).toContain('* 6 FETCH (UID 6)');
  });

  it('answers a COPY past the limit with the copies renumbered', async () => {
    await setUidNext(LAST_UID);
    const client = await loggedIn();
    await client.command('SELECT INBOX');
    const copied = (await client.command('UID COPY 1:2 INBOX')).at(-1)!;
    expect(copied).toMatch(/\[COPYUID \d+ 1:2 7:8\]/);
    expect((await storedUids()).map(([uid]) => uid)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it("renumbers Drafts too when its counter (every draft write takes a UID) runs past the limit", async () => {
    const made = await world.h.app.inject({ method: 'POST', url: '/app/api/drafts', headers: session(await world.ownerSession(acme)), payload: { mailbox: BOX, subject: 'kept draft', body: 'Kept.' } });
    expect(made.statusCode, made.body).toBe(201);
    await setUidNext(LAST_UID, 'drafts');
    const client = await loggedIn();
    const before = code(await client.command('SELECT Drafts'), 'UIDVALIDITY');
    const raw = `From: <${BOX}>\r\nSubject: appended draft\r\n\r\nHalf.\r\n`;
    const tag = client.nextTag();
    client.send(`${tag} APPEND Drafts {${raw.length}+}`);
    client.send(raw);
    const appended = (await client.waitFor(new RegExp(`^${tag} `))).at(-1)!;
    // The APPEND took UID 4294967295, which left UIDNEXT past the limit: renumbered 1, 2 at once.
    const m = /\[APPENDUID (\d+) (\d+)\]/.exec(appended)!;
    expect(Number(m[1])).toBeGreaterThan(before);
    expect(Number(m[2])).toBe(2);
    const drafts = await db().selectFrom('drafts').select(['uid', 'subject']).where('workspace_id', '=', acme.workspaceId).orderBy('uid').execute();
    expect(drafts.map((d) => [Number(d.uid), d.subject])).toEqual([[1, 'kept draft'], [2, 'appended draft']]);
    const other = await loggedIn();
    const status = (await other.command('STATUS Drafts (MESSAGES UIDNEXT UIDVALIDITY)')).join('\n');
    expect(status).toMatch(new RegExp(`MESSAGES 2 UIDNEXT 3 UIDVALIDITY ${m[1]}`));
  });
});

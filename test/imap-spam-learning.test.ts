// A mail client's MOVE into and out of Spam teaches rspamd as the API's move does: a lesson queued in the move's
// transaction. The worker's side (the lesson reaching a real rspamd) is test/rspamd.test.ts's; here no worker runs
// and rspamd's URL names the closed discard port (scoring fails open with `accept`), so the lessons stay queued to be read.
import { beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/lib/logger.js';
import { createImapServer } from '../src/transports/imap/server.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer } from './helpers/harness.js';
import { ImapLines } from './helpers/imap-lines.js';
import { mailWorld, type WorldTenant } from './helpers/world.js';

const MAILBOX = 'learner@mailroom.localhost';

describe(`IMAP MOVE teaches rspamd (${TEST_DIALECT})`, () => {
  const world = mailWorld({ peer: false, env: { MAILROOM_ALLOW_PLAINTEXT_AUTH: 'loopback', MAILROOM_RSPAMD_URL: 'http://127.0.0.1:9', MAILROOM_RSPAMD_ON_ERROR: 'accept' } });
  let acme: WorldTenant;
  let port: number;
  let password: string;

  const deliver = async (subject: string): Promise<string> => {
    const raw = `From: <news@sender.test>\r\nTo: <${MAILBOX}>\r\nSubject: ${subject}\r\nMessage-ID: <${subject.replace(/\W/g, '')}@sender.test>\r\nDate: Fri, 20 Nov 2026 10:00:00 +0000\r\n\r\nHello.\r\n`;
    await world.h.sendRaw(raw, { from: 'news@sender.test', to: [MAILBOX] });
    const list = await world.h.app.inject({ method: 'GET', url: `/inbox?mailbox=${encodeURIComponent(MAILBOX)}&limit=100`, headers: bearer(acme.apiKey) });
    return list.json<{ messages: Array<{ message_id: string; subject: string }> }>().messages.find((m) => m.subject === subject)!.message_id;
  };
  /** The lessons queued so far, oldest first. */
  const lessons = async (): Promise<Array<{ messageId: string; kind: string }>> => {
    const rows = await world.h.services.database.db.selectFrom('jobs').select(['payload', 'workspace_id']).where('queue', '=', 'spam-learn').orderBy('created_at').orderBy('id').execute();
    for (const r of rows) expect(r.workspace_id).toBe(acme.workspaceId);
    return rows.map((r) => JSON.parse(r.payload) as { messageId: string; kind: string });
  };

  beforeAll(async () => {
    acme = await world.tenant('Acme', [MAILBOX]);
    password = (await world.appPassword(acme, MAILBOX, 'learner')).password;
    port = await world.own(createImapServer({ access: world.h.services.imapAccess, logger: createLogger('silent'), appendLimit: 1024 * 1024, maxClients: 20, maxClientsPerIp: 10, allowPlaintextAuth: 'loopback', tls: null })).listen('127.0.0.1', 0);
  });

  it('queues spam for a move into Spam, ham for a move out of it, and nothing for one into Trash or between others', async () => {
    const first = await deliver('First');
    const second = await deliver('Second');
    const client = world.own(await ImapLines.open(port));
    expect((await client.command(`LOGIN ${MAILBOX} "${password}"`)).at(-1)).toMatch(/^t\d+ OK/);
    await client.command('SELECT INBOX');
    // Both into Spam, then First back to INBOX (ham), Second into Trash (no lesson), then Trash to Archive (none).
    expect((await client.command('UID MOVE 1:2 Spam')).at(-1)).toMatch(/^t\d+ OK/);
    await client.command('SELECT Spam');
    expect((await client.command('UID MOVE 1 INBOX')).at(-1)).toMatch(/^t\d+ OK/);
    expect((await client.command('UID MOVE 2 Trash')).at(-1)).toMatch(/^t\d+ OK/);
    await client.command('SELECT Trash');
    expect((await client.command('UID MOVE 1 Archive')).at(-1)).toMatch(/^t\d+ OK/);
    const queued = await lessons();
    expect(queued.slice(0, 2).map((l) => l.kind)).toEqual(['spam', 'spam']);
    expect(new Set(queued.slice(0, 2).map((l) => l.messageId))).toEqual(new Set([first, second]));
    expect(queued.slice(2)).toEqual([{ messageId: first, kind: 'ham' }]);
  });
});

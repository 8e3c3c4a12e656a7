import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { sql, type Kysely } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { packStructure, STRUCTURE_VERSION, structureBytes, unpackStructure } from '../src/lib/imap-message/index.js';
import { createLogger } from '../src/lib/logger.js';
import { createImapServer } from '../src/transports/imap/server.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, session } from './helpers/harness.js';
import { ImapLines } from './helpers/imap-lines.js';
import { closeAfterTest, mailWorld, type WorldTenant } from './helpers/world.js';

// FETCH's ENVELOPE, BODYSTRUCTURE and BODY come from the mail store's kept copies (message_structures) once the
// first FETCH has computed them: the same bytes every time, served from the table (a planted row shows), recomputed
// when the serializer's version changes, copied with COPY, gone with EXPUNGE, never another workspace's.

const FIXTURES = new URL('./fixtures/eml/', import.meta.url);
const MAILBOX = 'fetch-cache@mailroom.localhost';
const OTHER = 'fetch-cache-other@mailroom.localhost';
const STRUCTURE = 'FETCH 1:* (FLAGS ENVELOPE BODYSTRUCTURE BODY)';

/**
 * The bytes of every fixture's ENVELOPE, BODYSTRUCTURE and BODY, hashed, for STRUCTURE_VERSION. Kept rows of a version
 * are served as they are: when a change to lib/imap-message changes these bytes, raise STRUCTURE_VERSION (rows of
 * the old one are then computed again) and put the new version and digest here.
 */
const PINNED = { version: 1, digest: '1785738f3f10f4ba7f4f9c3690a807650393f666562d8460b699f214e5317f6c' };

/** A message of the corpus with parts inside parts (BODYSTRUCTURE has something to say). */
const nested = () => readFileSync(new URL('07-nested-mixed-alt-related.eml', FIXTURES));

describe('kept FETCH structures: the version', () => {
  it('pins the corpus bytes to STRUCTURE_VERSION (a serializer change must raise it)', () => {
    const hash = createHash('sha256');
    for (const name of readdirSync(FIXTURES).filter((n) => n.endsWith('.eml')).sort()) {
      const s = structureBytes(readFileSync(new URL(name, FIXTURES)));
      hash.update(name).update(s.envelope).update('\0').update(s.bodyStructure).update('\0').update(s.body).update('\0');
    }
    expect({ version: STRUCTURE_VERSION, digest: hash.digest('hex') }).toEqual(PINNED);
  });
});

describe(`IMAP FETCH through kept structures (${TEST_DIALECT})`, { timeout: 120_000 }, () => {
  const world = mailWorld({ peer: false, env: { MAILROOM_ALLOW_PLAINTEXT_AUTH: 'loopback' } });
  let acme: WorldTenant;
  let other: WorldTenant;
  const passwords = new Map<string, string>();
  let port: number;
  const db = () => world.h.services.database.db;

  const appPassword = async (tenant: WorldTenant, mailbox: string): Promise<string> => {
    const res = await world.h.app.inject({ method: 'POST', url: '/app/api/app-passwords', headers: session(await world.ownerSession(tenant)), payload: { name: 'fetch-cache', mailbox } });
    expect(res.statusCode).toBe(201);
    return res.json<{ password: string }>().password;
  };
  const deliver = async (tenant: WorldTenant, to: string, raw: Buffer | string, subject: string): Promise<string> => {
    await world.h.sendRaw(raw, { from: 'alice@sender.test', to: [to] });
    const list = await world.h.app.inject({ method: 'GET', url: `/inbox?mailbox=${encodeURIComponent(to)}&limit=100`, headers: bearer(tenant.apiKey) });
    const found = list.json<{ messages: Array<{ message_id: string; subject: string }> }>().messages.find((m) => m.subject === subject);
    if (!found) throw new Error(`message ${subject} was not stored`);
    return found.message_id;
  };
  const plain = (to: string, subject: string) =>
    `From: "Alice A." <alice@sender.test>\r\nTo: <${to}>\r\nSubject: ${subject}\r\nMessage-ID: <${subject.replace(/\W/g, '')}@sender.test>\r\nDate: Fri, 20 Nov 2026 10:00:00 +0000\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nHello.\r\n`;
  const rawOf = async (tenant: WorldTenant, id: string) => (await world.h.app.inject({ method: 'GET', url: `/messages/${id}/raw`, headers: bearer(tenant.apiKey) })).rawPayload;
  /** A session logged in to `address` with `folder` selected. */
  const open = async (address: string, folder = 'INBOX'): Promise<ImapLines> => {
    const client = closeAfterTest(await ImapLines.open(port));
    expect((await client.command(`LOGIN ${address} "${passwords.get(address)!}"`)).at(-1)).toMatch(/ OK /);
    expect((await client.command(`SELECT ${folder}`)).at(-1)).toMatch(/ OK /);
    return client;
  };
  /** A command's untagged lines (literals inline), after checking it answered OK. */
  const answer = async (client: ImapLines, command: string): Promise<string[]> => {
    const lines = await client.command(command);
    expect(lines.at(-1), command).toMatch(/^t\d+ OK /);
    return lines.slice(0, -1);
  };
  /** The kept rows of these messages, by message id (sorted here: the databases' collations differ). */
  const kept = async (ids: readonly string[]) =>
    (await db().selectFrom('message_structures').select(['message_id', 'workspace_id', 'version', 'structure']).where('message_id', 'in', ids).execute())
      .map((r) => ({ ...r, ...unpackStructure(Buffer.from(r.structure))! }))
      .sort((a, b) => (a.message_id < b.message_id ? -1 : 1));

  let nestedId: string;
  let plainId: string;

  beforeAll(async () => {
    acme = await world.tenant('Acme', [MAILBOX]);
    other = await world.tenant('Other', [OTHER]);
    passwords.set(MAILBOX, await appPassword(acme, MAILBOX));
    passwords.set(OTHER, await appPassword(other, OTHER));
    const logger = createLogger('silent');
    port = await world.own(createImapServer({ access: world.h.services.imapAccess, logger, appendLimit: 1024 * 1024, maxClients: 20, maxClientsPerIp: 20, allowPlaintextAuth: 'loopback', tls: null })).listen('127.0.0.1', 0);
    nestedId = await deliver(acme, MAILBOX, nested(), 'Trip photos and budget');
    plainId = await deliver(acme, MAILBOX, plain(MAILBOX, 'Plain one'), 'Plain one');
    await deliver(other, OTHER, plain(OTHER, 'Other workspace'), 'Other workspace');
  });

  it('answers the same bytes twice, keeps what it computed from the raw source, and serves the kept row', async () => {
    expect(await kept([nestedId, plainId])).toEqual([]);
    const client = await open(MAILBOX);
    const first = await answer(client, STRUCTURE);
    expect(first.join('\n')).toContain('"Trip photos and budget"');
    // The rows are there, this workspace's, of this version, holding what the library computes from the stored bytes.
    const rows = await kept([nestedId, plainId]);
    expect(rows.map((r) => [r.message_id, r.workspace_id, r.version])).toEqual([nestedId, plainId].sort().map((id) => [id, acme.workspaceId, STRUCTURE_VERSION]));
    for (const row of rows) {
      const computed = structureBytes(await rawOf(acme, row.message_id));
      expect([row.envelope, row.bodyStructure, row.body]).toEqual([computed.envelope, computed.bodyStructure, computed.body]);
      expect(first.join('\r\n')).toContain(`ENVELOPE ${computed.envelope.toString('latin1')} BODYSTRUCTURE ${computed.bodyStructure.toString('latin1')} BODY ${computed.body.toString('latin1')})`);
    }
    expect(await answer(client, STRUCTURE)).toEqual(first);
    // With a section asked for, the values are computed from the raw source: the same bytes.
    const withSection = await answer(client, 'FETCH 1:* (FLAGS ENVELOPE BODYSTRUCTURE BODY BODY.PEEK[HEADER.FIELDS (X-None)])');
    expect(withSection.join('\r\n').replace(/ BODY\[HEADER\.FIELDS \(X-NONE\)\] \{2\}\r\n\r\n\)/g, ')')).toEqual(first.join('\r\n'));

    // A planted row is what FETCH sends: the answer comes from the table, not from the raw source.
    const [plainRow] = await kept([plainId]);
    const planted = packStructure({ ...plainRow!, envelope: Buffer.from('("planted" NIL NIL NIL NIL NIL NIL NIL NIL NIL)', 'latin1') });
    await db().updateTable('message_structures').set({ structure: planted }).where('message_id', '=', plainId).execute();
    expect((await answer(client, 'FETCH 2 (ENVELOPE)')).join('\n')).toContain('ENVELOPE ("planted" NIL');
    // A row of another version is not served: computed again, and replaced by this version's.
    await db().updateTable('message_structures').set({ version: STRUCTURE_VERSION - 1 }).where('message_id', '=', plainId).execute();
    expect((await answer(client, 'FETCH 2 (ENVELOPE)')).join('\n')).toContain('ENVELOPE ("Fri, 20 Nov 2026 10:00:00 +0000" "Plain one"');
    const [again] = await kept([plainId]);
    expect([again!.version, again!.envelope]).toEqual([STRUCTURE_VERSION, structureBytes(await rawOf(acme, plainId)).envelope]);
  });

  it('answers even when keeping the computed bytes fails', async () => {
    const trigger = db() as unknown as Kysely<unknown>;
    await db().deleteFrom('message_structures').where('message_id', '=', plainId).execute();
    if (TEST_DIALECT === 'postgres') {
      await sql`create function refuse_structures() returns trigger language plpgsql as $$ begin raise exception 'refused'; end $$`.execute(trigger);
      await sql`create trigger refuse_structures before insert on ${sql.table('message_structures')} for each row execute function refuse_structures()`.execute(trigger);
    } else {
      await sql`create trigger refuse_structures before insert on ${sql.table('message_structures')} begin select raise(abort, 'refused'); end`.execute(trigger);
    }
    try {
      const client = await open(MAILBOX);
      const lines = await answer(client, 'FETCH 2 (ENVELOPE)');
      expect(lines.join('\n')).toContain(`ENVELOPE ${structureBytes(await rawOf(acme, plainId)).envelope.toString('latin1')}`);
      expect(await kept([plainId])).toEqual([]);
    } finally {
      await sql`drop trigger refuse_structures${TEST_DIALECT === 'postgres' ? sql` on ${sql.table('message_structures')}` : sql``}`.execute(trigger);
      if (TEST_DIALECT === 'postgres') await sql`drop function refuse_structures()`.execute(trigger);
    }
  });

  it('copies the kept rows with COPY, computes those of copies never fetched, and loses them with EXPUNGE', async () => {
    const client = await open(MAILBOX);
    const inbox = await answer(client, STRUCTURE);
    expect((await client.command('COPY 1:2 Archive')).at(-1)).toMatch(/ OK /);
    const archive = await open(MAILBOX, 'Archive');
    const copies = await answer(archive, 'FETCH 1:2 (FLAGS ENVELOPE BODYSTRUCTURE BODY)');
    expect(copies).toEqual(inbox.slice(0, 2));
    const copyIds = await db().selectFrom('messages').select('id').where('workspace_id', '=', acme.workspaceId).where('folder', '=', 'archive').orderBy('uid').execute();
    const copiedRows = await kept(copyIds.map((r) => r.id));
    expect(copiedRows.map((r) => r.workspace_id)).toEqual([acme.workspaceId, acme.workspaceId]);
    const originals = await kept([nestedId, plainId]);
    expect(copiedRows.map((r) => Buffer.from(r.bodyStructure)).sort((a, b) => Buffer.compare(a, b))).toEqual(originals.map((r) => Buffer.from(r.bodyStructure)).sort((a, b) => Buffer.compare(a, b)));

    // A copy of a message never fetched has no row; its first FETCH computes it.
    const fresh = await deliver(acme, MAILBOX, plain(MAILBOX, 'Never fetched'), 'Never fetched');
    expect((await client.command('NOOP')).at(-1)).toMatch(/ OK /);
    expect((await client.command('UID COPY 1:* Archive')).at(-1)).toMatch(/ OK /);
    expect(await kept([fresh])).toEqual([]);
    const archived = await db().selectFrom('messages').select('id').where('workspace_id', '=', acme.workspaceId).where('folder', '=', 'archive').orderBy('uid').execute();
    expect((await kept(archived.map((r) => r.id))).length).toBe(archived.length - 1);
    expect((await answer(archive, 'NOOP')).join('\n')).toContain('EXISTS');
    expect((await answer(archive, 'FETCH 1:* (ENVELOPE)')).join('\n')).toContain('"Never fetched"');
    expect((await kept(archived.map((r) => r.id))).length).toBe(archived.length);

    // EXPUNGE: the message and its row are gone; the others answer as before.
    const before = await answer(archive, 'FETCH 2:* (ENVELOPE BODYSTRUCTURE)');
    expect((await archive.command('STORE 1 +FLAGS.SILENT (\\Deleted)')).at(-1)).toMatch(/ OK /);
    expect((await archive.command('EXPUNGE')).at(-1)).toMatch(/ OK /);
    expect(await kept([archived[0]!.id])).toEqual([]);
    expect(await db().selectFrom('messages').select('id').where('id', '=', archived[0]!.id).execute()).toEqual([]);
    const after = await answer(archive, 'FETCH 1:* (ENVELOPE BODYSTRUCTURE)');
    expect(after.map((l) => l.replace(/^\* \d+ /, ''))).toEqual(before.map((l) => l.replace(/^\* \d+ /, '')));
  });

  it("never serves another workspace's row, and keeps each workspace's rows apart", async () => {
    const mine = await open(OTHER);
    expect((await answer(mine, 'FETCH 1:* (ENVELOPE)')).join('\n')).toContain('"Other workspace"');
    const otherIds = await db().selectFrom('messages').select('id').where('workspace_id', '=', other.workspaceId).execute();
    expect((await kept(otherIds.map((r) => r.id))).map((r) => r.workspace_id)).toEqual([other.workspaceId]);
    // A row naming acme's message but another workspace (as no code path writes) is not acme's: not served.
    await db().deleteFrom('message_structures').where('message_id', '=', plainId).execute();
    await db()
      .insertInto('message_structures')
      .values({ message_id: plainId, workspace_id: other.workspaceId, version: STRUCTURE_VERSION, structure: packStructure({ envelope: Buffer.from('("foreign" NIL NIL NIL NIL NIL NIL NIL NIL NIL)'), bodyStructure: Buffer.from('NIL'), body: Buffer.from('NIL') }) })
      .execute();
    const client = await open(MAILBOX);
    const lines = (await answer(client, 'FETCH 1:* (ENVELOPE BODYSTRUCTURE)')).join('\n');
    expect(lines).not.toContain('foreign');
    expect(lines).toContain('"Plain one"');
    expect(lines).not.toContain('"Other workspace"');
    await db().deleteFrom('message_structures').where('message_id', '=', plainId).execute();
  });
});

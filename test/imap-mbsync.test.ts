// mbsync (Debian's isync) syncing a Mailroom mailbox with a local Maildir both ways, twice: a real client's whole
// round of LIST, SELECT, UID FETCH, APPEND (with UIDPLUS) and flag sync against the IMAP server over loopback.
// Skips where mbsync is not installed (.ci/run installs it).
import { execFile, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/lib/logger.js';
import { createImapServer, type ImapServer } from '../src/transports/imap/server.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, session } from './helpers/harness.js';
import { mailWorld, type MessageView, type WorldTenant } from './helpers/world.js';

/** mbsync's version (`isync 1.4.4`), or null when it is not installed. */
function mbsyncVersion(): string | null {
  try {
    return execFileSync('mbsync', ['--version'], { encoding: 'utf8' }).trim();
  } catch {
    return null;
  }
}
const VERSION = mbsyncVersion();

const MAILBOX = 'mbsync-user@mailroom.localhost';
const FOLDERS = ['INBOX', 'Archive', 'Drafts', 'Sent', 'Spam', 'Trash'];

/**
 * Every file under `dir` (relative path → SHA-256 of its bytes): the Maildir and mbsync's state. Of a state file only
 * its message pairs count (far UID, near UID, flags): its header holds mbsync's own bookkeeping (the highest UID seen
 * on each side), which the run after a push moves past the pushed message's UID without changing any message.
 */
async function snapshot(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    let bytes = await readFile(path);
    if (entry.name === '.mbsyncstate') bytes = Buffer.from(bytes.toString('utf8').split('\n\n').slice(1).join('\n\n'));
    out[relative(dir, path)] = createHash('sha256').update(bytes).digest('hex');
  }
  return out;
}

/** The messages of a local Maildir folder (cur and new). */
async function maildirFiles(dir: string): Promise<string[]> {
  const files: string[] = [];
  for (const sub of ['cur', 'new']) files.push(...(await readdir(join(dir, sub)).catch(() => [] as string[])).map((f) => join(dir, sub, f)));
  return files;
}

describe.skipIf(VERSION === null)(`mbsync against the IMAP server (${TEST_DIALECT})`, { timeout: 240_000 }, () => {
  const world = mailWorld({ peer: false, env: { MAILROOM_ALLOW_PLAINTEXT_AUTH: 'loopback' } });
  let acme: WorldTenant;
  let dir: string;
  let config: string;

  const list = async (folder: string): Promise<MessageView[]> => {
    const res = await world.h.app.inject({ method: 'GET', url: `/inbox?mailbox=${encodeURIComponent(MAILBOX)}&folder=${folder}&limit=200`, headers: bearer(acme.apiKey) });
    expect(res.statusCode).toBe(200);
    return res.json<{ messages: MessageView[] }>().messages;
  };
  const deliver = async (subject: string): Promise<string> => {
    const raw = `From: Alice <alice@sender.test>\r\nTo: <${MAILBOX}>\r\nSubject: ${subject}\r\nMessage-ID: <${subject.replace(/\W/g, '')}@sender.test>\r\nDate: Fri, 20 Nov 2026 10:00:00 +0000\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nHello, ${subject}.\r\n`;
    await world.h.sendRaw(raw, { from: 'alice@sender.test', to: [MAILBOX] });
    const found = (await list('inbox')).find((m) => m.subject === subject);
    if (!found) throw new Error(`message ${subject} was not stored`);
    return found.message_id;
  };
  const post = async (url: string, payload: Record<string, unknown>) => {
    const res = await world.h.app.inject({ method: 'POST', url, headers: bearer(acme.apiKey), payload });
    expect(res.statusCode, res.body).toBeLessThan(300);
  };
  /** Each folder's count and UIDNEXT as the server says (STATUS through the access service, as a session reads it). */
  const serverState = async () => {
    const access = world.h.services.imapAccess;
    const login = await access.login(MAILBOX, password, '127.0.0.1');
    if (!login.ok) throw new Error('login failed');
    const out: Record<string, unknown> = {};
    for (const name of FOLDERS) {
      const st = await access.status(login.account, access.folder(name)!);
      out[name] = { total: st.total, uidnext: st.uidnext, highestmodseq: st.highestmodseq, unseen: st.unseen };
    }
    return out;
  };
  const mbsync = (): Promise<{ stdout: string; stderr: string }> =>
    new Promise((resolve, reject) => {
      execFile('mbsync', ['-c', config, '-a'], { timeout: 60_000, env: { ...process.env, HOME: dir } }, (err, stdout, stderr) => {
        if (err) reject(new Error(`mbsync failed: ${err.message}\n${stdout}\n${stderr}`));
        else resolve({ stdout, stderr });
      });
    });
  let password = '';

  beforeAll(async () => {
    acme = await world.tenant('Acme', [MAILBOX]);
    const token = await world.ownerSession(acme);
    const made = await world.h.app.inject({ method: 'POST', url: '/app/api/app-passwords', headers: session(token), payload: { name: 'mbsync', mailbox: MAILBOX } });
    expect(made.statusCode).toBe(201);
    password = made.json<{ password: string }>().password;
    const server: ImapServer = createImapServer({ access: world.h.services.imapAccess, logger: createLogger('silent'), appendLimit: 1024 * 1024, maxClients: 20, maxClientsPerIp: 10, allowPlaintextAuth: 'loopback', tls: null });
    world.own(server);
    const port = await server.listen('127.0.0.1', 0);
    dir = await mkdtemp(join(tmpdir(), 'mailroom-mbsync-'));
    // isync 1.5 renamed SSLType to TLSType.
    const [major, minor] = (/(\d+)\.(\d+)/.exec(VERSION!) ?? ['', '1', '4']).slice(1).map(Number) as [number, number];
    const tls = major > 1 || minor >= 5 ? 'TLSType None' : 'SSLType None';
    config = join(dir, 'mbsyncrc');
    await writeFile(
      config,
      [
        'IMAPAccount mailroom',
        'Host 127.0.0.1',
        `Port ${port}`,
        `User ${MAILBOX}`,
        `Pass "${password}"`,
        'AuthMechs LOGIN',
        tls,
        '',
        'IMAPStore mailroom',
        'Account mailroom',
        '',
        'MaildirStore local',
        `Path ${dir}/mail/`,
        `Inbox ${dir}/mail/INBOX`,
        'SubFolders Verbatim',
        '',
        'Channel mailroom',
        'Far :mailroom:',
        'Near :local:',
        'Patterns *',
        'Create Near',
        'Expunge None',
        'SyncState *',
        'CopyArrivalDate yes',
        '',
      ].join('\n'),
    );
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('pulls every folder into a Maildir and pushes a local message (APPEND); a second run changes nothing', async () => {
    // Mail in several folders: received, one read, one archived, one filed in Sent (through the API).
    const read = await deliver('Read on the server');
    await post(`/messages/${read}/read`, { read: true });
    const archived = await deliver('Archived on the server');
    await post(`/messages/${archived}/move`, { folder: 'archive' });
    const filed = await deliver('Filed in Sent');
    await post(`/messages/${filed}/move`, { folder: 'sent' });
    // A message written locally before the first run: mbsync finds it new and appends it.
    const inbox = join(dir, 'mail', 'INBOX');
    for (const sub of ['cur', 'new', 'tmp']) await mkdir(join(inbox, sub), { recursive: true });
    const local = 'From: Me <mbsync-user@mailroom.localhost>\nTo: <friend@peer.test>\nSubject: Written locally\nMessage-ID: <written-locally@client.test>\nDate: Sat, 21 Nov 2026 12:00:00 +0000\n\nPushed by mbsync.\n';
    await writeFile(join(inbox, 'new', '1790000000.M1P1.mailroom-test'), local);

    await mbsync();
    const pushed = (await list('inbox')).find((m) => m.subject === 'Written locally');
    expect(pushed, 'the local message is in the inbox through the API').toBeDefined();
    const raw = (await world.h.app.inject({ method: 'GET', url: `/messages/${pushed!.message_id}/raw`, headers: bearer(acme.apiKey) })).rawPayload.toString('latin1');
    // mbsync stores with CRLF line ends; an X-TUID header (its own way to find a message without UIDPLUS) is left out.
    expect(raw.replace(/^X-TUID: [^\r\n]*\r\n/m, '')).toBe(local.replace(/\n/g, '\r\n'));
    const state = await serverState();
    for (const name of FOLDERS) {
      const files = await maildirFiles(name === 'INBOX' ? inbox : join(dir, 'mail', name));
      expect(files.length, name).toBe((state[name] as { total: number }).total);
    }
    expect((await maildirFiles(join(dir, 'mail', 'Archive'))).length).toBe(1);
    expect((await maildirFiles(join(dir, 'mail', 'Sent'))).length).toBe(1);
    const pulled = await maildirFiles(inbox);
    // The message read on the server is marked seen (`S`) in its Maildir name; the others are not.
    const contents = await Promise.all(pulled.map(async (f) => ({ f, text: await readFile(f, 'latin1') })));
    const seen = contents.find((c) => c.text.includes('Subject: Read on the server'))!;
    expect(seen.f).toMatch(/:2,[A-Z]*S[A-Z]*$/);
    expect(contents.find((c) => c.text.includes('Subject: Archived'))).toBeUndefined();

    const before = await snapshot(dir);
    const messages = await serverState();
    const second = await mbsync();
    // Its summary, when it prints one, counts nothing propagated either way.
    for (const m of `${second.stdout}\n${second.stderr}`.matchAll(/(?:Far|Near): ([^\n]*)/g)) expect(m[1]).toMatch(/^\+0\/0 +\*0\/0 +#0\/0 +-0\/0/);
    expect(await snapshot(dir)).toEqual(before);
    expect(await serverState()).toEqual(messages);
    expect((await list('inbox')).filter((m) => m.subject === 'Written locally')).toHaveLength(1);
  });
});

import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/lib/logger.js';
import { RAW_READ_BYTES } from '../src/modules/imap-access/raw-reads.js';
import { createImapServer } from '../src/transports/imap/server.js';
import type { FairGate } from '../src/lib/fair-gate.js';
import { createImapShares, type ImapShares } from '../src/transports/imap/shares.js';
import { BIN, ROOT } from './helpers/cli.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer } from './helpers/harness.js';
import { ImapLines } from './helpers/imap-lines.js';
import { TEST_SERVICE_ENV } from './helpers/service-env.js';
import { mailWorld, type WorldTenant } from './helpers/world.js';

// IDLE hears changes through the mail signal (rung after each commit that changes a mailbox's folders, across
// processes by NOTIFY): every server here looks at its folder on its own only every 10 minutes, so a report that
// arrives at all came by the signal. Then each workspace's share of sessions and of running commands.

const MAILBOX = 'live@mailroom.localhost';
const HEAVY = 'heavy@mailroom.localhost';
const LIGHT = 'light@mailroom.localhost';
const NO_POLL_MS = 600_000;
const OTHER = 'other@mailroom.localhost';
const PIPELINED = 'pipelined@mailroom.localhost';
const LARGE = 'large@mailroom.localhost';
const PULLED = 'pulled@mailroom.localhost';

/** The gate itself, telling `seen` what one key holds and has waiting each time it asks for or gets a turn. */
function recording(gate: FairGate, key: () => string, seen: (held: number, waiting: number) => void): FairGate {
  return {
    async acquire(k) {
      const turn = gate.acquire(k);
      if (k === key()) seen(gate.activeFor(k), gate.waitingFor(k));
      const release = await turn;
      if (k === key()) seen(gate.activeFor(k), gate.waitingFor(k));
      return release;
    },
    tryAcquire: (k) => gate.tryAcquire(k),
    get active() {
      return gate.active;
    },
    activeFor: (k) => gate.activeFor(k),
    get waiting() {
      return gate.waiting;
    },
    waitingFor: (k) => gate.waitingFor(k),
  };
}

describe(`IMAP live changes and shares (${TEST_DIALECT})`, () => {
  const world = mailWorld({ peer: false, env: { MAILROOM_ALLOW_PLAINTEXT_AUTH: 'loopback' } });
  let acme: WorldTenant;
  let heavy: WorldTenant;
  let light: WorldTenant;
  const passwords = new Map<string, string>();
  let port: number;
  let sharedPort: number;
  let shares: ImapShares;
  // What the heavy workspace held at the gate, seen at each of its turns.
  let peak = 0;
  const clients: ImapLines[] = [];

  const appPassword = async (tenant: WorldTenant, mailbox: string): Promise<string> => (await world.appPassword(tenant, mailbox, 'live')).password;
  const deliver = async (tenant: WorldTenant, to: string, subject: string, body = 'Hello.\r\n'): Promise<string> => {
    const raw = `From: Alice <alice@sender.test>\r\nTo: <${to}>\r\nSubject: ${subject}\r\nMessage-ID: <${subject.replace(/\W/g, '')}.${Date.now()}@sender.test>\r\nDate: Fri, 20 Nov 2026 10:00:00 +0000\r\n\r\n${body}`;
    await world.h.sendRaw(raw, { from: 'alice@sender.test', to: [to] });
    const list = await world.h.app.inject({ method: 'GET', url: `/inbox?mailbox=${encodeURIComponent(to)}&limit=100`, headers: bearer(tenant.apiKey) });
    const found = list.json<{ messages: Array<{ message_id: string; subject: string }> }>().messages.find((m) => m.subject === subject);
    if (!found) throw new Error(`message ${subject} was not stored`);
    return found.message_id;
  };
  const open = async (at: number): Promise<ImapLines> => {
    const client = await ImapLines.open(at);
    clients.push(client);
    return client;
  };
  const loggedIn = async (at: number, address: string): Promise<ImapLines> => {
    const client = await open(at);
    expect((await client.command(`LOGIN ${address} "${passwords.get(address)!}"`)).at(-1)).toMatch(/^t\d+ OK/);
    return client;
  };
  const exists = (lines: string[]): number => Number(lines.find((l) => / EXISTS$/.test(l))!.split(' ')[1]);
  type Access = typeof world.h.services.imapAccess;
  /** A listener of its own over `access` (one that counts or holds back what the session asks of it). */
  const listenerOver = (access: Access, idlePollMs = NO_POLL_MS): Promise<number> =>
    world.own(createImapServer({ access, logger: createLogger('silent'), appendLimit: 1024 * 1024, maxClients: 50, maxClientsPerIp: 50, allowPlaintextAuth: 'loopback', tls: null, idlePollMs })).listen('127.0.0.1', 0);
  /** A new mailbox of Acme's with an app password. */
  const acmeMailbox = async (address: string): Promise<void> => {
    await world.mailbox(acme, address);
    passwords.set(address, await appPassword(acme, address));
  };

  beforeAll(async () => {
    acme = await world.tenant('Acme', [MAILBOX]);
    heavy = await world.tenant('Heavy', [HEAVY]);
    light = await world.tenant('Light', [LIGHT]);
    for (const [tenant, address] of [[acme, MAILBOX], [heavy, HEAVY], [light, LIGHT]] as const) passwords.set(address, await appPassword(tenant, address));
    const common = { access: world.h.services.imapAccess, logger: createLogger('silent'), appendLimit: 1024 * 1024, maxClients: 50, maxClientsPerIp: 50, allowPlaintextAuth: 'loopback' as const, tls: null, idlePollMs: NO_POLL_MS };
    port = await world.own(createImapServer(common)).listen('127.0.0.1', 0);
    // A listener with small shares: 3 sessions a workspace, 2 of the 3 command turns (their use recorded).
    const made = createImapShares({ sessionsPerWorkspace: 3, commands: 3, commandsPerWorkspace: 2 });
    shares = {
      admit: (w) => made.admit(w),
      sessionsOf: (w) => made.sessionsOf(w),
      commands: recording(made.commands, () => heavy.workspaceId, (held) => (peak = Math.max(peak, held))),
    };
    sharedPort = await world.own(createImapServer({ ...common, shares })).listen('127.0.0.1', 0);
    world.own({ close: () => clients.forEach((c) => c.close()) });
  });

  it('IDLE reports an arrival, a read flag, flags, a move and a delete made through the API as they commit', async () => {
    await deliver(acme, MAILBOX, 'Before idling');
    const client = await loggedIn(port, MAILBOX);
    const count = exists(await client.command('SELECT INBOX'));
    client.send('i1 IDLE');
    await client.waitFor(/^\+ idling/);

    const id = await deliver(acme, MAILBOX, 'Arrives while idling');
    await client.waitFor(new RegExp(`^\\* ${count + 1} EXISTS$`));
    expect((await world.h.app.inject({ method: 'POST', url: `/messages/${id}/read`, headers: bearer(acme.apiKey), payload: { read: true } })).statusCode).toBe(200);
    await client.waitFor(new RegExp(`^\\* ${count + 1} FETCH \\(FLAGS \\(\\\\Seen\\)\\)$`));
    expect((await world.h.app.inject({ method: 'POST', url: `/messages/${id}/flags`, headers: bearer(acme.apiKey), payload: { flagged: true } })).statusCode).toBe(200);
    await client.waitFor(new RegExp(`^\\* ${count + 1} FETCH \\(FLAGS \\(\\\\Flagged \\\\Seen\\)\\)$`));
    // Moved to the archive: gone from INBOX.
    expect((await world.h.app.inject({ method: 'POST', url: `/messages/${id}/move`, headers: bearer(acme.apiKey), payload: { folder: 'archive' } })).statusCode).toBe(200);
    await client.waitFor(new RegExp(`^\\* ${count + 1} EXPUNGE$`));
    // A delete of the first message; then the same session sees a second arrival.
    const first = (await world.h.app.inject({ method: 'GET', url: `/inbox?mailbox=${encodeURIComponent(MAILBOX)}&limit=100`, headers: bearer(acme.apiKey) })).json<{ messages: Array<{ message_id: string; subject: string }> }>().messages.find((m) => m.subject === 'Before idling')!;
    expect((await world.h.app.inject({ method: 'DELETE', url: `/messages/${first.message_id}`, headers: bearer(acme.apiKey) })).statusCode).toBeLessThan(300);
    const gone = await client.waitFor(/^\* \d+ EXPUNGE$/);
    expect(gone.at(-1)).toMatch(new RegExp(`^\\* ${count} EXPUNGE$`));
    await deliver(acme, MAILBOX, 'Second arrival');
    await client.waitFor(new RegExp(`^\\* ${count} EXISTS$`));
    client.send('DONE');
    expect((await client.waitFor(/^i1 /)).at(-1)).toBe('i1 OK Idle completed.');
    // NOOP still reports nothing new, and the view matches the folder.
    const noop = await client.command('NOOP');
    expect(noop).toEqual([expect.stringMatching(/^t\d+ OK/)]);
    const search = await client.command('SEARCH ALL');
    expect(search[0]!.split(' ').length - 2).toBe(count);
  });

  it('IDLE reports flags and expunges made by another IMAP session (STORE, EXPUNGE)', async () => {
    await deliver(acme, MAILBOX, 'Shared by two sessions');
    const idler = await loggedIn(port, MAILBOX);
    const count = exists(await idler.command('SELECT INBOX'));
    idler.send('i1 IDLE');
    await idler.waitFor(/^\+ idling/);
    const other = await loggedIn(port, MAILBOX);
    await other.command('SELECT INBOX');
    expect((await other.command(`STORE ${count} +FLAGS.SILENT (\\Deleted)`)).at(-1)).toMatch(/OK/);
    await idler.waitFor(new RegExp(`^\\* ${count} FETCH \\(FLAGS \\(.*\\\\Deleted.*\\)\\)$`));
    expect((await other.command('EXPUNGE')).at(-1)).toMatch(/OK/);
    await idler.waitFor(new RegExp(`^\\* ${count} EXPUNGE$`));
    idler.send('DONE');
    expect((await idler.waitFor(/^i1 /)).at(-1)).toBe('i1 OK Idle completed.');
  });

  it("IDLE's safety poll reads the folder's modseq and looks at the folder only when it moved (a lost signal)", async () => {
    // A listener that never hears the signal and polls every 100 ms; its reads of the whole index are counted.
    const access = world.h.services.imapAccess;
    let indexReads = 0;
    const deaf = { ...access, changes: () => () => undefined, index: (...args: Parameters<typeof access.index>) => (indexReads++, access.index(...args)) };
    const deafPort = await listenerOver(deaf, 100);
    const id = await deliver(acme, MAILBOX, 'Polled');
    const client = await loggedIn(deafPort, MAILBOX);
    const count = exists(await client.command('SELECT INBOX'));
    client.send('i1 IDLE');
    await client.waitFor(/^\+ idling/);
    const afterFirstLook = indexReads;
    // Ten polls of an unchanged folder read no index.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(indexReads).toBe(afterFirstLook);
    expect((await world.h.app.inject({ method: 'POST', url: `/messages/${id}/flags`, headers: bearer(acme.apiKey), payload: { flagged: true } })).statusCode).toBe(200);
    // The message delivered last is the folder's last.
    await client.waitFor(new RegExp(`^\\* ${count} FETCH \\(FLAGS \\(\\\\Flagged\\)\\)$`));
    expect(indexReads).toBeGreaterThan(afterFirstLook);
    client.send('DONE');
    expect((await client.waitFor(/^i1 /)).at(-1)).toBe('i1 OK Idle completed.');
  });

  it('answers pipelined FETCHes in order, reading the messages of those before one that sets \\Seen in one statement', async () => {
    const access = world.h.services.imapAccess;
    let reads = 0;
    const counted = {
      ...access,
      messages: (...args: Parameters<typeof access.messages>) => (reads++, access.messages(...args)),
      rawReads: (...args: Parameters<typeof access.rawReads>) => (reads++, access.rawReads(...args)),
    };
    const countedPort = await listenerOver(counted);
    await acmeMailbox(PIPELINED);
    for (const n of [1, 2, 3, 4]) await deliver(acme, PIPELINED, `Pipelined ${n}`, `Body ${n}.\r\n`);
    const client = await loggedIn(countedPort, PIPELINED);
    expect(exists(await client.command('SELECT INBOX'))).toBe(4);
    const before = reads;
    // One write, as mbsync pipelines: the FETCHes, a bad one, then IDLE with its DONE already behind it.
    const commands = ['UID FETCH 1 (BODY.PEEK[])', 'UID FETCH 2 (BODY.PEEK[])', 'UID FETCH 3 (FLAGS BODY.PEEK[])', 'FETCH 1 (BODY.PEEK[TEXT])', 'UID FETCH 2 (BODY[])', 'UID FETCH 2 (FLAGS)', 'UID FETCH x (FLAGS)', 'UID FETCH 4 (BODY.PEEK[])', 'IDLE'];
    client.send(`${commands.map((c, i) => `p${i + 1} ${c}`).join('\r\n')}\r\nDONE`);
    const lines = await client.waitFor(/^p9 /);
    const answers = lines.filter((l) => /^p\d /.test(l));
    expect(answers).toEqual(['p1 OK Fetch completed.', 'p2 OK Fetch completed.', 'p3 OK Fetch completed.', 'p4 OK Fetch completed.', 'p5 OK Fetch completed.', 'p6 OK Fetch completed.', expect.stringMatching(/^p7 BAD /), 'p8 OK Fetch completed.', 'p9 OK Idle completed.']);
    // Each answer's data comes before its tag: message n's body right before pn.
    const at = (text: string) => lines.findIndex((l) => l.includes(text));
    expect(at('Body 1.')).toBeLessThan(at('p1 OK'));
    expect(at('Body 2.')).toBeGreaterThan(at('p1 OK'));
    expect(at('Body 2.')).toBeLessThan(at('p2 OK'));
    expect(lines.slice(at('p2 OK'), at('p3 OK')).join('\n')).toContain('* 3 FETCH (UID 3 FLAGS () BODY[] {');
    expect(lines.slice(at('p4 OK'), at('p5 OK')).join('\n')).toMatch(/\* 2 FETCH \(UID 2 (FLAGS \(\\Seen\) BODY\[\]|BODY\[\] .* FLAGS \(\\Seen\))/);
    // The FETCH after the one that set \Seen sees it.
    expect(lines.slice(at('p5 OK') + 1, at('p6 OK'))).toEqual(['* 2 FETCH (UID 2 FLAGS (\\Seen))']);
    expect(at('Body 4.')).toBeGreaterThan(at('p7 BAD'));
    // p1–p4 from one read; p5 (it sets \Seen), p6 and p8 each read their own.
    expect(reads - before).toBe(4);
  });

  it("reads a run's next messages while it answers the ones before them, holding two reads at most", async () => {
    const access = world.h.services.imapAccess;
    // Each raw read: when it began and when its rows came. The first is held back until the second begins (or 5 s):
    // only a session that asks for the next read before it has answered this one gets past it at once.
    const raw: Array<{ began: number; done: number | null }> = [];
    let secondBegan: () => void = () => undefined;
    const second = new Promise<void>((resolve) => (secondBegan = resolve));
    const recorded = {
      ...access,
      async messages(...args: Parameters<typeof access.messages>) {
        if (args[3] !== 'raw') return access.messages(...args);
        const read = { began: performance.now(), done: null as number | null };
        raw.push(read);
        if (raw.length === 2) secondBegan();
        const rows = await access.messages(...args);
        if (read === raw[0]) await Promise.race([second, new Promise((resolve) => setTimeout(resolve, 5000))]);
        read.done = performance.now();
        return rows;
      },
    };
    const recordedPort = await listenerOver(recorded);
    await acmeMailbox(PULLED);
    const count = 70;
    for (let n = 1; n <= count; n++) await deliver(acme, PULLED, `Pulled ${n}`, `Body ${n}.\r\n`);
    const client = await loggedIn(recordedPort, PULLED);
    expect(exists(await client.command('SELECT INBOX'))).toBe(count);
    // As mbsync pulls: one FETCH a message, all in one write.
    client.send(Array.from({ length: count }, (_, i) => `f${i + 1} UID FETCH ${i + 1} (BODY.PEEK[])`).join('\r\n') + '\r\n');
    const lines = await client.waitFor(new RegExp(`^f${count} `));
    for (let n = 1; n <= count; n++) expect(lines.findIndex((l) => l === `Body ${n}.`)).toBeLessThan(lines.indexOf(`f${n} OK Fetch completed.`));
    // 32 messages a read: three reads. The second began before the first was done; the third only after it.
    expect(raw).toHaveLength(3);
    expect(raw[1]!.began).toBeLessThan(raw[0]!.done!);
    expect(raw[2]!.began).toBeGreaterThanOrEqual(raw[0]!.done!);
  });

  it('reads raw sources a bounded amount at a time: a FETCH of large messages holds one read, not its batch', async () => {
    const access = world.h.services.imapAccess;
    const reads: number[] = [];
    const recorded = {
      ...access,
      async *rawReads(...args: Parameters<typeof access.rawReads>) {
        for await (const rows of access.rawReads(...args)) {
          reads.push(rows.reduce((n, r) => n + r.raw!.length, 0));
          yield rows;
        }
      },
    };
    const recordedPort = await listenerOver(recorded);
    await acmeMailbox(LARGE);
    // Three messages of 6 MB: 18 MB in all, above one read's 16 MiB.
    const lineCount = 62_915;
    const body = `${'x'.repeat(98)}\r\n`.repeat(lineCount);
    for (const n of [1, 2, 3]) await deliver(acme, LARGE, `Large ${n}`, body);
    const client = await loggedIn(recordedPort, LARGE);
    expect(exists(await client.command('SELECT INBOX'))).toBe(3);
    const lines = await client.command('FETCH 1:* (BODY.PEEK[])');
    expect(lines.at(-1)).toMatch(/^t\d+ OK Fetch completed\.$/);
    expect(lines.filter((l) => /^\* \d FETCH \(BODY\[\] \{\d+\}$/.test(l))).toHaveLength(3);
    expect(lines.filter((l) => l === 'x'.repeat(98))).toHaveLength(3 * lineCount);
    // Two reads, each within the bound (the first holds two messages, the second one).
    expect(reads).toHaveLength(2);
    for (const bytes of reads) expect(bytes).toBeLessThanOrEqual(RAW_READ_BYTES);
  }, 120_000);

  it('allows IDLE in the authenticated state: it waits for DONE', async () => {
    const client = await loggedIn(port, MAILBOX);
    client.send('a1 IDLE');
    await client.waitFor(/^\+ idling/);
    client.send('DONE');
    expect(await client.waitFor(/^a1 /)).toEqual(['a1 OK Idle completed.']);
    // Not logged in, it is still refused.
    const anonymous = await open(port);
    expect(await anonymous.command('IDLE')).toEqual([expect.stringMatching(/^t\d+ BAD/)]);
  });

  it("caps a workspace's sessions (NO [UNAVAILABLE]) while another workspace logs in, and keeps its commands answered under the first's flood", async () => {
    // A folder worth fetching whole: 12 messages of 64 KiB.
    for (let i = 0; i < 12; i++) await deliver(heavy, HEAVY, `Heavy ${i}`, `${'x'.repeat(76)}\r\n`.repeat(840));
    await deliver(light, LIGHT, 'Light one');
    const floods = [await loggedIn(sharedPort, HEAVY), await loggedIn(sharedPort, HEAVY), await loggedIn(sharedPort, HEAVY)];
    expect(shares.sessionsOf(heavy.workspaceId)).toBe(3);
    const fourth = await open(sharedPort);
    expect((await fourth.command(`LOGIN ${HEAVY} "${passwords.get(HEAVY)!}"`)).at(-1)).toMatch(/^t\d+ NO \[UNAVAILABLE\] /);
    for (const c of floods) await c.command('SELECT INBOX');

    // Each session pipelines 4 whole-folder fetches; the gate lets 2 of the workspace's commands run at once.
    peak = 0;
    const flooding = floods.map(async (c) => {
      const tags = [1, 2, 3, 4].map(() => c.nextTag());
      for (const tag of tags) c.send(`${tag} FETCH 1:* (BODY.PEEK[])`);
      for (const tag of tags) expect((await c.waitFor(new RegExp(`^${tag} (OK|NO|BAD)`), 120_000)).at(-1)).toBe(`${tag} OK Fetch completed.`);
    });
    const b = await loggedIn(sharedPort, LIGHT);
    expect(exists(await b.command('SELECT INBOX'))).toBe(1);
    const fetched = await b.command('FETCH 1 (BODY.PEEK[HEADER.FIELDS (SUBJECT)])');
    expect(fetched.join('\n')).toContain('Subject: Light one');
    expect(fetched.at(-1)).toMatch(/^t\d+ OK Fetch completed\.$/);
    await Promise.all(flooding);
    expect(peak).toBeGreaterThan(0);
    expect(peak).toBeLessThanOrEqual(2);
    // A session that ends gives its place back.
    floods[0]!.close();
    await new Promise<void>((resolve) => {
      const check = setInterval(() => shares.sessionsOf(heavy.workspaceId) < 3 && (clearInterval(check), resolve()), 5);
    });
    await loggedIn(sharedPort, HEAVY);
  }, 180_000);
});

/** `mailroom serve --role imap` as a child process, once it logs `imap listening` (with its port) and `metrics listening`. */
function spawnImap(env: Record<string, string>): Promise<{ child: ChildProcess; port: number; metricsUrl: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, 'serve', '--role', 'imap'], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...TEST_SERVICE_ENV, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let port: number | undefined;
    let metricsUrl: string | undefined;
    const timer = setTimeout(() => reject(new Error(`imap did not start: ${out}`)), 60_000);
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      for (const line of out.split('\n')) {
        if (!line.startsWith('{')) continue;
        try {
          const entry = JSON.parse(line) as { msg?: string; port?: number; url?: string };
          if (entry.msg === 'imap listening') port = entry.port;
          if (entry.msg === 'metrics listening') metricsUrl = entry.url;
          if (port !== undefined && metricsUrl !== undefined) {
            clearTimeout(timer);
            resolve({ child, port, metricsUrl });
          }
        } catch {
          // a partial line
        }
      }
    });
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('close', (code) => reject(new Error(`imap exited with ${code}: ${out}`)));
  });
}

// Processes share a database only on PostgreSQL (SQLite is the one-process mode).
describe.skipIf(TEST_DIALECT !== 'postgres')('IMAP IDLE across processes (NOTIFY)', () => {
  const world = mailWorld({ peer: false });
  let acme: WorldTenant;
  let child: ChildProcess | undefined;
  let port: number;
  let metricsUrl: string;
  let password: string;
  let otherPassword: string;

  beforeAll(async () => {
    acme = await world.tenant('Acme', [MAILBOX, OTHER]);
    password = (await world.appPassword(acme, MAILBOX, 'live')).password;
    otherPassword = (await world.appPassword(acme, OTHER, 'other')).password;
    const started = await spawnImap({
      MAILROOM_DATABASE_URL: world.h.database.url,
      ...world.h.database.secretEnv,
      MAILROOM_LOG_LEVEL: 'info',
      MAILROOM_SMTP_HOST: '127.0.0.1',
      MAILROOM_SMTP_HOSTNAME: 'mx.mailroom.test',
      MAILROOM_IMAP_PORT: '0',
      MAILROOM_ALLOW_PLAINTEXT_AUTH: 'loopback',
      // Only a notification can report a change within the test.
      MAILROOM_IMAP_IDLE_POLL_MS: String(NO_POLL_MS),
      MAILROOM_METRICS_PORT: '0',
    });
    child = started.child;
    port = started.port;
    metricsUrl = started.metricsUrl;
  }, 90_000);
  afterAll(async () => {
    const running = child;
    if (!running || running.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      running.on('close', () => resolve());
      running.kill('SIGTERM');
    });
  });

  it('an IDLE in the imap process hears an arrival, a flag and a delete committed by this one', async () => {
    const client = await ImapLines.open(port);
    try {
      expect((await client.command(`LOGIN ${MAILBOX} "${password}"`)).at(-1)).toMatch(/OK/);
      const selected = await client.command('SELECT INBOX');
      expect(selected).toContain('* 0 EXISTS');
      client.send('i1 IDLE');
      await client.waitFor(/^\+ idling/);
      const raw = `From: <alice@sender.test>\r\nTo: <${MAILBOX}>\r\nSubject: Across\r\nMessage-ID: <across@sender.test>\r\n\r\nHi.\r\n`;
      await world.h.sendRaw(raw, { from: 'alice@sender.test', to: [MAILBOX] });
      await client.waitFor(/^\* 1 EXISTS$/);
      const list = await world.h.app.inject({ method: 'GET', url: `/inbox?mailbox=${encodeURIComponent(MAILBOX)}`, headers: bearer(acme.apiKey) });
      const id = list.json<{ messages: Array<{ message_id: string }> }>().messages[0]!.message_id;
      expect((await world.h.app.inject({ method: 'POST', url: `/messages/${id}/flags`, headers: bearer(acme.apiKey), payload: { flagged: true } })).statusCode).toBe(200);
      await client.waitFor(/^\* 1 FETCH \(FLAGS \(\\Flagged\)\)$/);
      expect((await world.h.app.inject({ method: 'DELETE', url: `/messages/${id}`, headers: bearer(acme.apiKey) })).statusCode).toBeLessThan(300);
      await client.waitFor(/^\* 1 EXPUNGE$/);
      client.send('DONE');
      expect(await client.waitFor(/^i1 /)).toEqual(['i1 OK Idle completed.']);
    } finally {
      client.close();
    }
  }, 60_000);

  it("a change wakes only its own mailbox's IDLE sessions in another process, not the workspace's others", async () => {
    const looks = async (): Promise<number> => {
      const body = await (await fetch(`${metricsUrl}/metrics`)).text();
      return Number(/^mailroom_imap_idle_looks_total (\d+)/m.exec(body)?.[1] ?? 0);
    };
    const client = await ImapLines.open(port);
    try {
      expect((await client.command(`LOGIN ${OTHER} "${otherPassword}"`)).at(-1)).toMatch(/OK/);
      expect(await client.command('SELECT INBOX')).toContain('* 0 EXISTS');
      client.send('i1 IDLE');
      await client.waitFor(/^\+ idling/);
      const before = await looks();
      // An arrival for the other mailbox of the workspace, then one for this session's: NOTIFYs arrive in commit
      // order, so once this session reports its own, the first has been heard too.
      const raw = (to: string, n: string) => `From: <alice@sender.test>\r\nTo: <${to}>\r\nSubject: Wake ${n}\r\nMessage-ID: <wake-${n}@sender.test>\r\n\r\nHi.\r\n`;
      await world.h.sendRaw(raw(MAILBOX, 'a'), { from: 'alice@sender.test', to: [MAILBOX] });
      await world.h.sendRaw(raw(OTHER, 'b'), { from: 'alice@sender.test', to: [OTHER] });
      await client.waitFor(/^\* 1 EXISTS$/);
      expect((await looks()) - before).toBe(1);
      client.send('DONE');
      expect(await client.waitFor(/^i1 /)).toEqual(['i1 OK Idle completed.']);
    } finally {
      client.close();
    }
  }, 60_000);
});

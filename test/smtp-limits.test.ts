import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/lib/logger.js';
import { createInboundSmtpServer, type InboundSmtpServer } from '../src/transports/smtp/inbound.server.js';
import { addressGroup } from '../src/transports/smtp/session-slots.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, type Tenant } from './helpers/harness.js';
import { startMailHarness, type MailHarness } from './helpers/mail.js';

/** A raw SMTP client from a chosen loopback address; `reply()` waits for the next complete reply. */
async function client(port: number, localAddress = '127.0.0.1') {
  const socket: Socket = connect({ port, host: '127.0.0.1', localAddress });
  socket.on('error', () => undefined);
  let buffer = '';
  let waiter: (() => void) | null = null;
  socket.on('data', (d: Buffer) => {
    buffer += d.toString('latin1');
    waiter?.();
  });
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  async function reply(timeoutMs = 5000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const match = /^((?:\d{3}-[^\n]*\n)*\d{3} [^\n]*\n)/.exec(buffer);
      if (match) {
        buffer = buffer.slice(match[1]!.length);
        return match[1]!;
      }
      if (Date.now() > deadline) throw new Error(`no SMTP reply; got ${JSON.stringify(buffer)}`);
      await new Promise<void>((resolve) => {
        waiter = resolve;
        setTimeout(resolve, 50);
      });
    }
  }
  return {
    socket,
    reply,
    closed,
    write: (data: string | Buffer) => new Promise<void>((resolve) => socket.write(data, () => resolve())),
    async send(line: string) {
      socket.write(`${line}\r\n`);
      return reply();
    },
    end: () => socket.destroy(),
  };
}
type Client = Awaited<ReturnType<typeof client>>;

/** Poll `check` until it holds (a generous bound: the server notices closed sockets asynchronously). */
async function eventually(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A session that keeps itself open with NOOP every 100 ms, as the attack did; `done` is the first other reply,
 * or `still open` once `forMs` passed (the load is bounded in time).
 */
function keepAlive(c: Client, forMs = 8000) {
  let stopped = false;
  const until = Date.now() + forMs;
  const done = (async () => {
    while (!stopped) {
      if (Date.now() > until) return 'still open';
      const answer = await c.send('NOOP').catch(() => 'no reply');
      if (!answer.startsWith('250 ')) return answer;
      await sleep(100);
    }
    return 'stopped';
  })();
  return { done, stop: () => ((stopped = true), done) };
}

/** A session from `from` past its greeting and EHLO. */
async function greeted(port: number, from: string): Promise<Client> {
  const c = await client(port, from);
  expect(await c.reply()).toMatch(/^220 /);
  expect(await c.send('EHLO client.test')).toMatch(/^250[ -]/);
  return c;
}

/** A session with a transaction in progress (MAIL FROM accepted), so it is not idle. */
async function busy(port: number, from: string): Promise<Client> {
  const c = await greeted(port, from);
  expect(await c.send('MAIL FROM:<sender@elsewhere.test>')).toMatch(/^250 /);
  return c;
}

describe(`inbound sessions are bounded (${TEST_DIALECT})`, () => {
  it('answers a session past the limit of one address group 421 4.7.0 when no session of the group is idle', async () => {
    const h = await startMailHarness();
    const open: Client[] = [];
    try {
      for (let i = 0; i < 20; i += 1) open.push(await busy(h.smtpPort, '127.0.0.1'));
      const extra = await client(h.smtpPort);
      expect(await extra.reply()).toMatch(/^421 4\.7\.0 Too many connections from 127\.0\.0\.0\/24, try again later/);
      await extra.closed;
      // One leaves: a new session is welcome again.
      open.pop()!.end();
      await eventually(async () => {
        const c = await client(h.smtpPort);
        const greeting = await c.reply();
        c.end();
        return greeting.startsWith('220 ');
      }, 'a free slot');
    } finally {
      for (const c of open) c.end();
      await h.close();
    }
  });

  it('limits sessions in all as well as per address group, and never evicts one in a transaction', async () => {
    const h = await startMailHarness({ MAILROOM_SMTP_MAX_CLIENTS: '3', MAILROOM_SMTP_MAX_CLIENTS_PER_IP: '2' });
    const open: Client[] = [];
    try {
      open.push(await busy(h.smtpPort, '127.0.0.1'), await busy(h.smtpPort, '127.0.0.1'));
      const sameGroup = await client(h.smtpPort, '127.0.0.1');
      open.push(sameGroup);
      expect(await sameGroup.reply()).toMatch(/^421 4\.7\.0 Too many connections from 127\.0\.0\.0\/24/);
      open.push(await busy(h.smtpPort, '127.0.1.1'));
      const otherGroup = await client(h.smtpPort, '127.0.2.1');
      open.push(otherGroup);
      expect(await otherGroup.reply()).toMatch(/^421 4\.7\.0 Too many connections, try again later/);
      // The sessions in a transaction were left alone.
      expect(await open[0]!.send('RSET')).toMatch(/^250 /);
      open[0]!.end();
      await eventually(async () => {
        const c = await client(h.smtpPort, '127.0.2.1');
        open.push(c);
        return (await c.reply()).startsWith('220 ');
      }, 'a free slot for another group');
    } finally {
      for (const c of open) c.end();
      await h.close();
    }
  });

  it('counts 127.0.0.1 and 127.0.0.2 in one /24 group', async () => {
    const h = await startMailHarness({ MAILROOM_SMTP_MAX_CLIENTS: '10', MAILROOM_SMTP_MAX_CLIENTS_PER_IP: '2' });
    const open: Client[] = [];
    try {
      open.push(await busy(h.smtpPort, '127.0.0.1'), await busy(h.smtpPort, '127.0.0.2'));
      const third = await client(h.smtpPort, '127.0.0.3');
      open.push(third);
      expect(await third.reply()).toMatch(/^421 4\.7\.0 Too many connections from 127\.0\.0\.0\/24/);
      await third.closed;
      // Another /24 has a share of its own.
      open.push(await greeted(h.smtpPort, '127.0.1.1'));
    } finally {
      for (const c of open) c.end();
      await h.close();
    }
  });

  it('makes room in a full group by closing that group\'s oldest idle session (421 4.4.2)', async () => {
    const h = await startMailHarness({ MAILROOM_SMTP_MAX_CLIENTS: '10', MAILROOM_SMTP_MAX_CLIENTS_PER_IP: '2' });
    const open: Client[] = [];
    try {
      const oldest = await greeted(h.smtpPort, '127.0.0.1');
      const younger = await greeted(h.smtpPort, '127.0.0.2');
      const elsewhere = await greeted(h.smtpPort, '127.0.1.1');
      open.push(oldest, younger, elsewhere);
      const newcomer = await client(h.smtpPort, '127.0.0.3');
      open.push(newcomer);
      expect(await newcomer.reply()).toMatch(/^220 /);
      expect(await oldest.reply()).toMatch(/^421 4\.4\.2 Idle session closed to make room for another, try again later/);
      await oldest.closed;
      expect(await younger.send('NOOP')).toMatch(/^250 /);
      expect(await elsewhere.send('NOOP')).toMatch(/^250 /);
    } finally {
      for (const c of open) c.end();
      await h.close();
    }
  });
});

describe(`NOOP-kept sessions cannot keep a sender out (${TEST_DIALECT})`, () => {
  it('stores a real sender\'s message for workspace G while sessions from three /24s fill the listener with NOOP', async () => {
    const h = await startMailHarness({ MAILROOM_SMTP_MAX_CLIENTS: '6', MAILROOM_SMTP_MAX_CLIENTS_PER_IP: '2' });
    const f = await createTenant(h, 'F');
    const g = await createTenant(h, 'G');
    await h.app.inject({ method: 'POST', url: '/mailboxes?address=f-desk@mailroom.localhost', headers: bearer(f.apiKey) });
    await h.app.inject({ method: 'POST', url: '/mailboxes?address=g-desk@mailroom.localhost', headers: bearer(g.apiKey) });
    const squatters: Client[] = [];
    const loops: Array<ReturnType<typeof keepAlive>> = [];
    try {
      for (let i = 0; i < 6; i += 1) {
        const c = await greeted(h.smtpPort, `127.0.${1 + (i % 3)}.1`);
        squatters.push(c);
        loops.push(keepAlive(c));
      }
      await sleep(300); // a few rounds of NOOP on every squatter
      const sent = await h.send({ from: 'alice@sender.test', to: 'g-desk@mailroom.localhost', subject: 'through', text: 'hello G' });
      expect(sent.response).toMatch(/^250 2\.0\.0 Stored as msg_/);
      const id = /Stored as (msg_\w+)/.exec(sent.response)![1]!;
      expect((await h.app.inject({ method: 'GET', url: `/messages/${id}`, headers: bearer(g.apiKey) })).statusCode).toBe(200);
      expect((await h.app.inject({ method: 'GET', url: `/messages/${id}`, headers: bearer(f.apiKey) })).statusCode).toBe(404);
      // The oldest squatter made room; the others still hold theirs.
      expect(await loops[0]!.done).toMatch(/^421 4\.4\.2 Idle session closed to make room/);
      for (const loop of loops.slice(1)) expect(await loop.stop()).toBe('stopped');
    } finally {
      for (const loop of loops) void loop.stop();
      for (const c of squatters) c.end();
      await h.close();
    }
  });
});

describe(`every session ends (${TEST_DIALECT})`, () => {
  it('closes a NOOP-kept session at its lifetime with 421 4.4.2', async () => {
    const h = await startMailHarness({ MAILROOM_SMTP_MAX_SESSION_MS: '1000' });
    try {
      const c = await greeted(h.smtpPort, '127.0.0.1');
      expect(await keepAlive(c).done).toMatch(/^421 4\.4\.2 Session time limit reached, closing connection/);
      await c.closed;
    } finally {
      await h.close();
    }
  });

  it('lets a message in DATA at the lifetime finish, answers it 250, then closes with 421 4.4.2', async () => {
    const h = await startMailHarness({ MAILROOM_SMTP_MAX_SESSION_MS: '1000' });
    const g = await createTenant(h, 'G');
    await h.app.inject({ method: 'POST', url: '/mailboxes?address=g-desk@mailroom.localhost', headers: bearer(g.apiKey) });
    try {
      const c = await greeted(h.smtpPort, '127.0.0.1');
      expect(await c.send('MAIL FROM:<alice@sender.test>')).toMatch(/^250 /);
      expect(await c.send('RCPT TO:<g-desk@mailroom.localhost>')).toMatch(/^250 /);
      expect(await c.send('DATA')).toMatch(/^354 /);
      await c.write('From: alice@sender.test\r\nTo: g-desk@mailroom.localhost\r\nSubject: across the limit\r\n\r\n');
      await sleep(1500); // the lifetime passes while the message arrives
      await c.write('the rest of the body\r\n');
      const answer = await c.send('.');
      expect(answer).toMatch(/^250 2\.0\.0 Stored as msg_/);
      expect(await c.reply()).toMatch(/^421 4\.4\.2 Session time limit reached, closing connection/);
      await c.closed;
      const id = /Stored as (msg_\w+)/.exec(answer)![1]!;
      expect((await h.app.inject({ method: 'GET', url: `/messages/${id}`, headers: bearer(g.apiKey) })).statusCode).toBe(200);
    } finally {
      await h.close();
    }
  });

  it('cuts a message still trickling in after the lifetime and its grace with 421 4.4.2, and stores nothing', async () => {
    const h = await startMailHarness();
    const g = await createTenant(h, 'G');
    await h.app.inject({ method: 'POST', url: '/mailboxes?address=g-desk@mailroom.localhost', headers: bearer(g.apiKey) });
    const smtp = createInboundSmtpServer({
      inbound: h.services.inbound,
      logger: createLogger('silent'),
      hostname: 'mx.mailroom.test',
      maxSize: 1024 * 1024,
      maxSessionMs: 500,
      lifetimeDataGraceMs: 500,
    });
    const port = await smtp.listen('127.0.0.1', 0);
    try {
      const c = await greeted(port, '127.0.0.1');
      expect(await c.send('MAIL FROM:<alice@sender.test>')).toMatch(/^250 /);
      expect(await c.send('RCPT TO:<g-desk@mailroom.localhost>')).toMatch(/^250 /);
      expect(await c.send('DATA')).toMatch(/^354 /);
      await c.write('From: alice@sender.test\r\nSubject: trickled\r\n\r\n');
      // One byte every 100 ms keeps the socket time-out from firing, for at most 8 s.
      let open = true;
      void c.closed.then(() => (open = false));
      for (const until = Date.now() + 8000; open && Date.now() < until; await sleep(100)) await c.write('x');
      expect(await c.reply()).toMatch(/^421 4\.4\.2 Session time limit reached, closing connection/);
      await c.closed;
      const list = await h.app.inject({ method: 'GET', url: '/inbox?mailbox=g-desk@mailroom.localhost', headers: bearer(g.apiKey) });
      expect(list.statusCode).toBe(200);
      expect(list.json<{ messages: unknown[] }>().messages).toEqual([]);
    } finally {
      await smtp.close();
      await h.close();
    }
  });

  it('answers the command past MAILROOM_SMTP_MAX_COMMANDS 421 4.7.0 and closes', async () => {
    const h = await startMailHarness({ MAILROOM_SMTP_MAX_COMMANDS: '10' });
    try {
      const c = await greeted(h.smtpPort, '127.0.0.1');
      for (let i = 0; i < 9; i += 1) expect(await c.send(i % 2 ? 'NOOP' : 'RSET')).toMatch(/^250 /);
      expect(await c.send('NOOP')).toMatch(/^421 4\.7\.0 Too many commands in one session, closing connection/);
      await c.closed;
    } finally {
      await h.close();
    }
  });

  it('closes a session that only sends NOOP for MAILROOM_SMTP_IDLE_MS with 421 4.4.2 (NOOP does not count as activity)', async () => {
    const h = await startMailHarness({ MAILROOM_SMTP_IDLE_MS: '1000' });
    try {
      const c = await greeted(h.smtpPort, '127.0.0.1');
      expect(await keepAlive(c).done).toMatch(/^421 4\.4\.2 Idle for too long, closing connection/);
      await c.closed;
    } finally {
      await h.close();
    }
  });
});

describe('address groups', () => {
  it('groups IPv4 by /24, IPv6 by /64, and IPv4-mapped IPv6 as IPv4', () => {
    expect(addressGroup('127.0.0.1')).toBe('127.0.0.0/24');
    expect(addressGroup('127.0.0.2')).toBe('127.0.0.0/24');
    expect(addressGroup('192.0.2.200')).toBe('192.0.2.0/24');
    expect(addressGroup('192.0.3.1')).toBe('192.0.3.0/24');
    expect(addressGroup('2001:db8:1:2:3:4:5:6')).toBe('2001:db8:1:2::/64');
    expect(addressGroup('2001:db8:1:2::ffff')).toBe('2001:db8:1:2::/64');
    expect(addressGroup('2001:db8:1:3::1')).toBe('2001:db8:1:3::/64');
    expect(addressGroup('::1')).toBe('::/64');
    expect(addressGroup('::ffff:192.0.2.7')).toBe('192.0.2.0/24');
    expect(addressGroup('::ffff:c000:0207')).toBe('192.0.2.0/24');
    // Not an address (a PROXY or XCLIENT peer name): a group of its own.
    expect(addressGroup('unknown')).toBe('unknown');
  });
});

describe(`large inbound messages are spooled, not held in memory (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let acme: Tenant;
  let smtp: InboundSmtpServer;
  let port: number;
  let dir: string;
  const MAX_SIZE = 2 * 1024 * 1024;

  beforeAll(async () => {
    h = await startMailHarness();
    acme = await createTenant(h);
    await h.app.inject({ method: 'POST', url: '/mailboxes?address=big@mailroom.localhost', headers: bearer(acme.apiKey) });
    dir = mkdtempSync(join(tmpdir(), 'mailroom-spool-test-'));
    // A small in-memory part, so that a 1 MiB message spills.
    smtp = createInboundSmtpServer({ inbound: h.services.inbound, logger: createLogger('silent'), hostname: 'mx.mailroom.test', maxSize: MAX_SIZE, spoolMemoryBytes: 64 * 1024, spoolDir: dir });
    port = await smtp.listen('127.0.0.1', 0);
  });
  afterAll(async () => {
    await smtp.close();
    await h.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A session up to DATA's 354 for big@mailroom.localhost. */
  async function toData(): Promise<Client> {
    const c = await client(port);
    await c.reply();
    await c.send('EHLO client.test');
    expect(await c.send('MAIL FROM:<sender@elsewhere.test>')).toMatch(/^250 /);
    expect(await c.send('RCPT TO:<big@mailroom.localhost>')).toMatch(/^250 /);
    expect(await c.send('DATA')).toMatch(/^354 /);
    return c;
  }
  /** A message of about `bytes` whose body lines are base64 (no line starts with a dot). */
  const message = (subject: string, bytes: number) =>
    Buffer.from(`From: sender@elsewhere.test\r\nTo: big@mailroom.localhost\r\nSubject: ${subject}\r\n\r\n${(randomBytes(Math.ceil((bytes * 3) / 4)).toString('base64').match(/.{1,76}/g) ?? []).join('\r\n')}\r\n`);

  it('stores a message larger than the in-memory part byte for byte, and removes its spill file', async () => {
    const raw = message('spooled', 1024 * 1024);
    const c = await toData();
    await c.write(raw.subarray(0, 300 * 1024));
    // The bytes past the in-memory part went to a file while the client was still sending.
    await eventually(() => readdirSync(dir).length === 1, 'a spill file');
    await c.write(raw.subarray(300 * 1024));
    const answer = await c.send('.');
    expect(answer).toMatch(/^250 2\.0\.0 Stored as msg_/);
    c.end();
    expect(readdirSync(dir)).toEqual([]);
    const id = /Stored as (msg_\w+)/.exec(answer)![1]!;
    const stored = await h.app.inject({ method: 'GET', url: `/messages/${id}/raw`, headers: bearer(acme.apiKey) });
    expect(stored.statusCode).toBe(200);
    // Kept exactly, behind the two fields Mailroom puts in front (Received-SPF, Authentication-Results).
    expect(stored.rawPayload.subarray(stored.rawPayload.length - raw.length).equals(raw)).toBe(true);
    expect(stored.rawPayload.subarray(0, stored.rawPayload.length - raw.length).toString()).toMatch(/^Received-SPF: [^\n]*\r\n(?:[ \t][^\n]*\r\n)*Authentication-Results: /);
  });

  it('removes the spill file of a message too big, and of one whose client went away', async () => {
    const tooBig = await toData();
    await tooBig.write(message('too big', MAX_SIZE + 100 * 1024));
    expect(await tooBig.send('.')).toMatch(/^552 5\.3\.4 /);
    tooBig.end();
    expect(readdirSync(dir)).toEqual([]);

    const gone = await toData();
    await gone.write(message('cut off', 512 * 1024));
    await eventually(() => readdirSync(dir).length === 1, 'a spill file');
    gone.end();
    await eventually(() => readdirSync(dir).length === 0, 'the spill file to go');
  });
});

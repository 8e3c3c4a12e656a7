import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/lib/logger.js';
import { createInboundSmtpServer, type InboundSmtpServer } from '../src/transports/smtp/inbound.server.js';
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

describe(`inbound sessions are bounded (${TEST_DIALECT})`, () => {
  it('answers the 21st concurrent session from one address 421 4.7.0 and closes it (default limit 20)', async () => {
    const h = await startMailHarness();
    const open: Client[] = [];
    try {
      for (let i = 0; i < 20; i += 1) {
        const c = await client(h.smtpPort);
        expect(await c.reply()).toMatch(/^220 /);
        open.push(c);
      }
      const extra = await client(h.smtpPort);
      expect(await extra.reply()).toMatch(/^421 4\.7\.0 Too many connections from 127\.0\.0\.1/);
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

  it('limits sessions in all as well as per address', async () => {
    const h = await startMailHarness({ MAILROOM_SMTP_MAX_CLIENTS: '3', MAILROOM_SMTP_MAX_CLIENTS_PER_IP: '2' });
    const open: Client[] = [];
    const greet = async (from: string) => {
      const c = await client(h.smtpPort, from);
      open.push(c);
      return c.reply();
    };
    try {
      expect(await greet('127.0.0.1')).toMatch(/^220 /);
      expect(await greet('127.0.0.1')).toMatch(/^220 /);
      expect(await greet('127.0.0.1')).toMatch(/^421 4\.7\.0 Too many connections from 127\.0\.0\.1/);
      expect(await greet('127.0.0.2')).toMatch(/^220 /);
      expect(await greet('127.0.0.3')).toMatch(/^421 4\.7\.0 Too many connections, try again later/);
      open[0]!.end();
      await eventually(async () => (await greet('127.0.0.3')).startsWith('220 '), 'a free slot for another address');
    } finally {
      for (const c of open) c.end();
      await h.close();
    }
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

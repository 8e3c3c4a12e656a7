import { connect, type Socket } from 'node:net';
import nodemailer from 'nodemailer';
import selfsigned from 'selfsigned';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/config.js';
import { createLogger } from '../src/lib/logger.js';
import { createServices } from '../src/main.js';
import { createInboundSmtpServer } from '../src/transports/smtp/inbound.server.js';
import { startServe, runCli } from './helpers/cli.js';
import { createTestDatabase, TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, type Tenant } from './helpers/harness.js';
import { startMailHarness, type MailHarness } from './helpers/mail.js';
import { freePort } from './helpers/ports.js';

/** A line-oriented SMTP conversation over a raw socket, for what nodemailer will not send. */
async function dialog(port: number) {
  const socket: Socket = connect(port, '127.0.0.1');
  let buffer = '';
  const waiters: Array<() => void> = [];
  socket.on('data', (d: Buffer) => {
    buffer += d.toString('latin1');
    for (const w of waiters.splice(0)) w();
  });
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  async function reply(timeoutMs = 5000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      // A complete reply ends with a line "NNN text" (no dash after the code).
      const match = /^((?:\d{3}-[^\n]*\n)*\d{3} [^\n]*\n)/.exec(buffer);
      if (match) {
        buffer = buffer.slice(match[1]!.length);
        return match[1]!;
      }
      if (Date.now() > deadline) throw new Error(`no SMTP reply; got ${JSON.stringify(buffer)}`);
      await new Promise<void>((resolve) => {
        waiters.push(resolve);
        setTimeout(resolve, 50);
      });
    }
  }
  return {
    reply,
    async send(line: string) {
      socket.write(`${line}\r\n`);
      return reply();
    },
    closed,
    end: () => socket.destroy(),
  };
}

describe(`SMTP protocol edges (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let acme: Tenant;

  beforeAll(async () => {
    h = await startMailHarness();
    acme = await createTenant(h);
    await h.app.inject({ method: 'POST', url: '/mailboxes?address=edge@mailroom.localhost', headers: bearer(acme.apiKey) });
  });
  afterAll(async () => h.close());

  it('answers protocol mistakes with an SMTP error and keeps serving', async () => {
    const c = await dialog(h.smtpPort);
    expect(await c.reply()).toMatch(/^220 /);
    expect(await c.send('EHLO client.test')).toMatch(/^250-.*\r?\n(250-.*\r?\n)*250 /);
    expect(await c.send('RCPT TO:<edge@mailroom.localhost>')).toMatch(/^503 /);
    expect(await c.send('MAIL FROM:<not an address>')).toMatch(/^5\d\d /);
    expect(await c.send('MAIL FROM:<>')).toMatch(/^250 /); // the null sender (bounces) is allowed
    expect(await c.send('RCPT TO:<edge@mailroom.localhost>')).toMatch(/^250 /);
    expect(await c.send('DATA')).toMatch(/^354 /);
    expect(await c.send('Subject: via raw socket\r\n\r\nbody\r\n.')).toMatch(/^250 2\.0\.0 Stored as msg_/);
    expect(await c.send('QUIT')).toMatch(/^221 /);
    c.end();
    const inbox = await h.app.inject({ method: 'GET', url: '/inbox?mailbox=edge@mailroom.localhost', headers: bearer(acme.apiKey) });
    expect(inbox.json<{ messages: Array<{ subject: string }> }>().messages.map((m) => m.subject)).toContain('via raw socket');
  });

  it('advertises SIZE and refuses a declared size over the limit at MAIL FROM', async () => {
    const c = await dialog(h.smtpPort);
    await c.reply();
    const ehlo = await c.send('EHLO client.test');
    expect(ehlo).toContain(`SIZE ${h.config.smtpMaxSize}`);
    expect(ehlo).not.toContain('STARTTLS'); // no certificate configured
    expect(await c.send(`MAIL FROM:<a@sender.test> SIZE=${h.config.smtpMaxSize + 1}`)).toMatch(/^552 /);
    c.end();
  });
});

describe('STARTTLS and shutdown', () => {
  it('offers STARTTLS when a certificate is configured, and a client that requires TLS gets through', async () => {
    const pems = await selfsigned.generate([{ name: 'commonName', value: 'mx.mailroom.test' }], { notAfterDate: new Date(Date.now() + 86_400_000), keySize: 2048 });
    const h = await startMailHarness();
    const smtp = createInboundSmtpServer({
      inbound: h.services.inbound,
      logger: createLogger('silent'),
      hostname: 'mx.mailroom.test',
      maxSize: 1024 * 1024,
      tls: { key: pems.private, cert: pems.cert },
    });
    const port = await smtp.listen('127.0.0.1', 0);
    try {
      const tenant = await createTenant(h);
      await h.app.inject({ method: 'POST', url: '/mailboxes?address=tls@mailroom.localhost', headers: bearer(tenant.apiKey) });
      const transport = nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, requireTLS: true, tls: { ca: pems.cert, servername: 'mx.mailroom.test' } });
      const info = await transport.sendMail({ from: 'a@sender.test', to: 'tls@mailroom.localhost', subject: 'over tls', text: 'secret' });
      expect(info.response).toMatch(/^250 /);
      // Without a certificate the plain listener refuses a TLS-only client.
      const plain = nodemailer.createTransport({ host: '127.0.0.1', port: h.smtpPort, secure: false, requireTLS: true });
      await expect(plain.sendMail({ from: 'a@sender.test', to: 'tls@mailroom.localhost', subject: 'x', text: 'x' })).rejects.toThrow(/STARTTLS/);
    } finally {
      await smtp.close();
      await h.close();
    }
  });

  it('answers open sessions 421 when it shuts down', async () => {
    const h = await startMailHarness();
    const smtp = createInboundSmtpServer({ inbound: h.services.inbound, logger: createLogger('silent'), hostname: 'mx.mailroom.test', maxSize: 1024, closeTimeoutMs: 100 });
    const port = await smtp.listen('127.0.0.1', 0);
    try {
      const c = await dialog(port);
      await c.reply();
      await c.send('EHLO client.test');
      const closing = smtp.close();
      expect(await c.reply(3000)).toMatch(/^421 /);
      await c.closed;
      await closing;
    } finally {
      await h.close();
    }
  });
});

describe(`durability of accepted mail (${TEST_DIALECT})`, () => {
  it('a message answered 250 survives kill -9 of the server right after', async () => {
    const database = await createTestDatabase();
    const env = { MAILROOM_DATABASE_URL: database.url, ...database.secretEnv, MAILROOM_LOG_LEVEL: 'info', MAILROOM_DNS_SERVERS: '127.0.0.1:9' };
    try {
      const boot = await runCli(['admin', 'bootstrap', '--email', 'o@example.com', '--password', 'durable-pass', '--workspace', 'D', '--json'], env);
      const { api_key: apiKey, workspace_id: workspaceId } = JSON.parse(boot.stdout) as { api_key: string; workspace_id: string };
      const smtpPort = await freePort();
      const server = await startServe(['--role', 'api,smtp'], { ...env, MAILROOM_HTTP_PORT: '0', MAILROOM_SMTP_PORT: String(smtpPort) });
      let sent: string[] = [];
      try {
        const created = await fetch(`${server.url}/mailboxes?address=durable@mailroom.localhost`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}` } });
        expect(created.status).toBe(201);
        const transport = nodemailer.createTransport({ host: '127.0.0.1', port: smtpPort, secure: false, ignoreTLS: true });
        const infos = await Promise.all(
          Array.from({ length: 5 }, (_, i) => transport.sendMail({ from: 'a@sender.test', to: 'durable@mailroom.localhost', subject: `durable ${i}`, text: 'x' })),
        );
        sent = infos.map((info) => /Stored as (msg_\w+)/.exec(info.response)![1]!);
      } finally {
        server.child.kill('SIGKILL');
        await server.exited;
      }
      const services = await createServices(loadConfig({ MAILROOM_DATABASE_URL: database.url, ...database.secretEnv, MAILROOM_LOG_LEVEL: 'silent' }));
      try {
        // Read back through the message service, as the API would list them (inbound mail is in the inbox).
        const page = await services.messages.list({ workspaceId, role: 'api_key', userId: null }, { limit: 500, offset: 0 });
        expect(page.messages.map((m) => m.message_id).sort()).toEqual([...sent].sort());
      } finally {
        await services.database.destroy();
      }
    } finally {
      await database.drop();
    }
  });
});

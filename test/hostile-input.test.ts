import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_ATTACHMENTS } from '../src/modules/messages/mime.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, type Tenant } from './helpers/harness.js';
import { startMailHarness, type MailHarness } from './helpers/mail.js';

/**
 * One hostile message, over real SMTP, is stored (or refused for good) in linear
 * time, outside any transaction other writers wait for, and holds up no other tenant's send or mail.
 */
const MiB = 1024 * 1024;
/** Far more than the work takes now (tens of milliseconds), far less than it took before (minutes). */
const GENEROUS_MS = 5000;

const PAYLOADS: Array<[string, string]> = [
  ['<', '<'.repeat(MiB)],
  ['<style', '<style'.repeat(MiB / 6)],
  ['<a ', '<a '.repeat(MiB / 3)],
  ['<<<>', '<<<>'.repeat(MiB / 4)],
];

/** The payload in each place a message carries attacker text. */
function hostileMessage(place: string, payload: string): string {
  const head = (fields: string[]) => ['From: attacker@sender.test', 'Message-ID: <hostile@sender.test>', 'MIME-Version: 1.0', ...fields].join('\r\n');
  switch (place) {
    case 'html body':
      return `${head(['To: target@mailroom.localhost', 'Subject: html', 'Content-Type: text/html; charset=utf-8'])}\r\n\r\n${payload}\r\n`;
    case 'text body':
      return `${head(['To: target@mailroom.localhost', 'Subject: text', 'Content-Type: text/plain; charset=utf-8'])}\r\n\r\n${payload}\r\n`;
    case 'subject':
      return `${head(['To: target@mailroom.localhost', `Subject: ${payload}`, 'Content-Type: text/plain'])}\r\n\r\nbody\r\n`;
    default:
      return `${head([`To: ${payload}`, 'Subject: to', 'Content-Type: text/plain'])}\r\n\r\nbody\r\n`;
  }
}

interface StoredView {
  folder: string;
  subject: string;
  snippet: string;
  size: number;
  auth: { spf: string; dkim: string; dmarc: string };
  attachments: unknown[];
  headers: Array<{ name: string; value: string }>;
}

describe(`hostile input over SMTP (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let acme: Tenant;
  let other: Tenant;

  beforeAll(async () => {
    // One analysis thread, as on a 2-core host: a message stuck on it would hold up every other one.
    h = await startMailHarness({ MAILROOM_SMTP_PARSER_THREADS: '1' });
    acme = await createTenant(h, 'Acme');
    other = await createTenant(h, 'Other');
    expect((await h.app.inject({ method: 'POST', url: '/mailboxes?address=target@mailroom.localhost', headers: bearer(acme.apiKey) })).statusCode).toBe(201);
    expect((await h.app.inject({ method: 'POST', url: '/mailboxes?address=desk@mailroom.localhost', headers: bearer(other.apiKey) })).statusCode).toBe(201);
  });
  afterAll(async () => h.close());

  /** Another workspace's sends, one after another while `work` runs: the slowest one's time, and how many there were. */
  async function sendsDuring<T>(work: Promise<T>): Promise<{ result: T; slowestMs: number; sends: number }> {
    let done = false;
    const finished = work.finally(() => {
      done = true;
    });
    let slowestMs = 0;
    let sends = 0;
    do {
      const started = performance.now();
      const res = await h.app.inject({ method: 'POST', url: '/send', headers: bearer(other.apiKey), payload: { from_mailbox: 'desk@mailroom.localhost', to: 'peer@elsewhere.test', subject: 'meanwhile', body: 'plain' } });
      expect(res.statusCode, res.body).toBe(202);
      slowestMs = Math.max(slowestMs, performance.now() - started);
      sends += 1;
      await new Promise((resolve) => setTimeout(resolve, 20));
    } while (!done);
    return { result: await finished, slowestMs, sends };
  }

  const storedId = (response: string) => /Stored as (msg_\w+)/.exec(response)?.[1];

  async function stored(id: string): Promise<StoredView> {
    const res = await h.app.inject({ method: 'GET', url: `/messages/${id}`, headers: bearer(acme.apiKey) });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<StoredView>();
  }

  describe.each(['html body', 'text body', 'subject', 'to'])('1 MiB as the %s', (place) => {
    it.each(PAYLOADS)('of %s is stored while another workspace sends undelayed', async (_name, payload) => {
      const raw = hostileMessage(place, payload);
      const { result, slowestMs, sends } = await sendsDuring(h.sendRaw(raw, { from: 'attacker@sender.test', to: ['target@mailroom.localhost'] }));
      expect(result.response).toMatch(/^250 /);
      expect(sends).toBeGreaterThan(0);
      expect(slowestMs).toBeLessThan(GENEROUS_MS);
      const message = await stored(storedId(result.response)!);
      expect(message.size).toBeGreaterThan(MiB);
      expect(message.snippet.length).toBeLessThanOrEqual(200);
      expect(message.subject.length).toBeLessThanOrEqual(998);
    });
  });

  it('checks no header block folded over 40,000 lines, stores it with `none` and does not hold up another tenant', async () => {
    // 400 KB: 40,000 continuation lines of 10 bytes in a Received field, which mailauth took longest over.
    const raw = `Received: from attacker.test\r\n${' aaaaaaa\r\n'.repeat(40_000)}From: attacker@sender.test\r\nTo: target@mailroom.localhost\r\nSubject: folded\r\n\r\nbody\r\n`;
    const hostile = h.sendRaw(raw, { from: 'attacker@sender.test', to: ['target@mailroom.localhost'] });
    // A second later, as in the report: the plain message must not wait for the hostile one's checks.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const started = performance.now();
    const plain = await h.send({ from: 'friend@sender.test', to: 'desk@mailroom.localhost', subject: 'plain', text: 'hello' });
    const plainMs = performance.now() - started;
    expect(plain.response).toMatch(/^250 /);
    expect(plainMs).toBeLessThan(GENEROUS_MS);
    const { response } = await hostile;
    expect(response).toMatch(/^250 /);
    const message = await stored(storedId(response)!);
    expect(message.auth).toEqual({ spf: 'none', dkim: 'none', dmarc: 'none' });
    // Unchecked mail could be a spoof that a DMARC policy would have refused: it goes to spam.
    expect(message.folder).toBe('spam');
    expect(message.headers[0]).toMatchObject({ name: 'Authentication-Results' });
    expect(message.headers[0]!.value).toMatch(/^mx\.mailroom\.test; dkim=none \(not checked: header block over \d+ (lines|bytes)\)/);
  });

  it('stores a subject, Message-ID and References of 998 random non-ASCII characters each (index entries have a size limit)', async () => {
    let seed = 22;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed;
    };
    // CJK characters in random order: three bytes each in UTF-8, and nothing a compressor could shrink.
    const wide = (n: number) => Array.from({ length: n }, () => String.fromCodePoint(0x4e00 + (random() % 20000))).join('');
    const encoded = (text: string) => `=?UTF-8?B?${Buffer.from(text).toString('base64')}?=`;
    const id = wide(990);
    const raw = [
      'From: wide@sender.test',
      'To: target@mailroom.localhost',
      `Subject: ${encoded(wide(998))}`,
      `Message-ID: <${id}@x>`,
      `References: <${wide(990)}@x> <${wide(990)}@y>`,
      'Content-Type: text/plain; charset=utf-8',
      '',
      wide(300),
      '',
    ].join('\r\n');
    for (const round of [1, 2]) {
      const { response } = await h.sendRaw(Buffer.from(raw), { from: 'wide@sender.test', to: ['target@mailroom.localhost'] });
      expect(response, `round ${round}`).toMatch(/^250 /);
    }
  });

  it(`keeps ${MAX_ATTACHMENTS} of 50,000 MIME parts as attachments and the raw message whole (250, never 451)`, async () => {
    const parts = Array.from({ length: 50_000 }, (_, i) => `--b\r\nContent-Type: application/x-part\r\n\r\n${i}\r\n`);
    const raw = `From: parts@sender.test\r\nTo: target@mailroom.localhost\r\nSubject: many parts\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary="b"\r\n\r\n${parts.join('')}--b--\r\n`;
    const { result, slowestMs } = await sendsDuring(h.sendRaw(raw, { from: 'parts@sender.test', to: ['target@mailroom.localhost'] }));
    expect(result.response).toMatch(/^250 /);
    expect(slowestMs).toBeLessThan(GENEROUS_MS);
    const id = storedId(result.response)!;
    const message = await stored(id);
    expect(message.attachments).toHaveLength(MAX_ATTACHMENTS);
    const source = await h.app.inject({ method: 'GET', url: `/messages/${id}/raw`, headers: bearer(acme.apiKey) });
    expect(source.statusCode).toBe(200);
    expect(source.body.endsWith(`--b\r\nContent-Type: application/x-part\r\n\r\n49999\r\n--b--\r\n`)).toBe(true);
  });
});

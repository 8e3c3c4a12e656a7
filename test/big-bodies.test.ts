import { randomBytes } from 'node:crypto';
import { request as httpRequest, type ClientRequest, type IncomingHttpHeaders } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, startHarness, type Harness, type Tenant } from './helpers/harness.js';

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** No answer within this long counts as "still waiting" (status 0), so a request the service holds fails the test rather than hanging it. */
const ANSWER_WAIT_MS = 5000;

describe(`big request bodies share a memory budget and requests under way a cap, per workspace (${TEST_DIALECT})`, () => {
  let h: Harness;
  let f: Tenant;
  let g: Tenant;
  let base: URL;
  const open: ClientRequest[] = [];

  /**
   * A real HTTP request whose body is `declared` bytes long, of which only `sent` go out now (a slow upload):
   * the service holds it while it reads. `answer` settles with the status, or 0 when none came in time.
   */
  function upload(path: string, key: string, declared: number | null, sent: Buffer): { answer: Promise<Answer>; request: ClientRequest } {
    const headers: Record<string, string> = { ...bearer(key), 'content-type': 'application/json' };
    if (declared !== null) headers['content-length'] = String(declared);
    const request = httpRequest(new URL(path, base), { method: 'POST', headers, agent: false });
    open.push(request);
    const answer = new Promise<Answer>((resolve) => {
      const timer = setTimeout(() => resolve({ status: 0, headers: {}, body: '' }), ANSWER_WAIT_MS);
      request.on('response', (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => {
          clearTimeout(timer);
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
        });
      });
      request.on('error', () => undefined);
    });
    request.write(sent);
    return { answer, request };
  }

  async function get(path: string, key: string): Promise<number> {
    const res = await fetch(new URL(path, base), { headers: bearer(key) });
    await res.arrayBuffer();
    return res.status;
  }

  /** Time for the service to take in what was sent so far (the requests before are under way). */
  const settle = () => new Promise((resolve) => setTimeout(resolve, 200));

  beforeAll(async () => {
    h = await startHarness({
      MAILROOM_HTTP_BODY_BUDGET_MB: '4',
      MAILROOM_HTTP_BODY_BUDGET_PER_WORKSPACE_MB: '2',
      MAILROOM_HTTP_BODY_WAIT_MS: '300',
      MAILROOM_HTTP_MAX_INFLIGHT: '100',
      MAILROOM_HTTP_MAX_INFLIGHT_PER_WORKSPACE: '3',
    });
    f = await createTenant(h, 'F');
    g = await createTenant(h, 'G');
    base = new URL(await h.app.listen({ host: '127.0.0.1', port: 0 }));
    expect((await h.app.inject({ method: 'POST', url: '/mailboxes?address=f@mailroom.localhost', headers: bearer(f.apiKey) })).statusCode).toBe(201);
  });
  afterEach(() => {
    for (const request of open.splice(0)) request.destroy();
  });
  afterAll(async () => h.close());

  it('a workspace past its share of body memory waits, then gets 503 with Retry-After; the other workspace goes on', async () => {
    const size = 1536 * 1024;
    const first = upload('/send', f.apiKey, size, Buffer.from('{"to":'));
    await settle();
    // F's second large body does not fit F's 2 MiB share while the first is read: it waits, then is refused.
    const second = upload('/send', f.apiKey, size, Buffer.from('{"to":'));
    // G's own large body and its small requests are admitted meanwhile.
    const other = upload('/send', g.apiKey, size, Buffer.from(`{"padding":"${'x'.repeat(size - 16)}"}`.padEnd(size, ' ')));
    expect(await get('/mailboxes', g.apiKey)).toBe(200);
    const refused = await second.answer;
    expect(refused.status, refused.body).toBe(503);
    expect(JSON.parse(refused.body)).toMatchObject({ error: 'server_busy' });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    const passed = await other.answer;
    expect(passed.status, passed.body).toBe(400); // read and validated: the body was admitted
    first.request.destroy();
  });

  it('a workspace with its most requests under way gets 429 with Retry-After; the other workspace does not', async () => {
    for (let i = 0; i < 3; i += 1) upload('/send', f.apiKey, 200, Buffer.from('{"to":'));
    await settle();
    const refused = await fetch(new URL('/mailboxes', base), { headers: bearer(f.apiKey) });
    expect(refused.status).toBe(429);
    expect(await refused.json()).toMatchObject({ error: 'too_many_in_flight' });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await get('/mailboxes', g.apiKey)).toBe(200);
    for (const request of open.splice(0)) request.destroy();
    await settle();
    // Answered or cut off, they free F's share.
    expect(await get('/mailboxes', f.apiKey)).toBe(200);
  });

  it('a chunked body takes the budget as it is read', async () => {
    const chunked = upload('/send', f.apiKey, null, Buffer.alloc(1536 * 1024, 0x20));
    await settle();
    const sized = upload('/send', f.apiKey, 1536 * 1024, Buffer.from('{"to":'));
    const refused = await sized.answer;
    expect(refused.status, refused.body).toBe(503);
    chunked.request.destroy();
  });

  describe('large JSON bodies parsed and composed off the main thread', () => {
    const post = (path: string, payload: unknown) =>
      fetch(new URL(path, base), { method: 'POST', headers: { ...bearer(f.apiKey), 'content-type': 'application/json' }, body: typeof payload === 'string' ? payload : JSON.stringify(payload) });
    const message = (file: Buffer, name: string) => ({
      from_mailbox: 'f@mailroom.localhost',
      to: 'someone@example.com',
      subject: name,
      body: 'see attached',
      attachments: [{ filename: name, content_type: 'application/octet-stream', content: file.toString('base64').replace(/.{76}/g, '$&\r\n') }],
    });
    const stored = async (id: string) => {
      const list = await h.app.inject({ method: 'GET', url: `/messages/${id}/attachments`, headers: bearer(f.apiKey) });
      const [first] = list.json<{ attachments: Array<{ attachment_id: string }> }>().attachments;
      const file = await h.app.inject({ method: 'GET', url: `/messages/${id}/attachments/${first!.attachment_id}`, headers: bearer(f.apiKey) });
      return file.rawPayload;
    };

    it('stores and composes the attachments of a send and of a batch byte for byte', async () => {
      const file = randomBytes(400 * 1024);
      const sent = await post('/send', message(file, 'one.bin'));
      expect(sent.status).toBe(202);
      const id = ((await sent.json()) as { message_id: string }).message_id;
      expect((await stored(id)).equals(file)).toBe(true);
      const raw = (await h.app.inject({ method: 'GET', url: `/messages/${id}/raw`, headers: bearer(f.apiKey) })).body;
      expect(raw).toContain(file.subarray(0, 57).toString('base64'));

      const files = [randomBytes(300 * 1024), randomBytes(200 * 1024)];
      const batch = await post('/send/batch', { messages: files.map((bytes, i) => message(bytes, `b${i}.bin`)) });
      expect(batch.status).toBe(200);
      const answers = ((await batch.json()) as { messages: Array<{ message_id: string }> }).messages;
      for (const [i, answer] of answers.entries()) expect((await stored(answer.message_id)).equals(files[i]!)).toBe(true);
    });

    it('refuses a large body that is not JSON, poisons a prototype or carries bad base64, as a small one (400)', async () => {
      const pad = 'x'.repeat(300 * 1024);
      const broken = await post('/send', `{"subject":"${pad}"`);
      expect(broken.status).toBe(400);
      expect(await broken.json()).toMatchObject({ error: 'invalid_json' });
      const poisoned = await post('/send', `{"subject":"${pad}","__proto__":{"x":1}}`);
      expect(poisoned.status).toBe(400);
      const badBase64 = message(randomBytes(200 * 1024), 'bad.bin');
      badBase64.attachments[0]!.content = `${badBase64.attachments[0]!.content}*`;
      const refused = await post('/send', badBase64);
      expect(refused.status).toBe(400);
      expect(((await refused.json()) as { detail: string }).detail).toContain('attachments[0].content is not valid base64');
    });
  });
});

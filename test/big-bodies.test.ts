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
});

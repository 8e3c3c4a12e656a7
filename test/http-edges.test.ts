import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_OFFSET } from '../src/transports/http/schemas.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, errorOf, login, session, startHarness, type Harness } from './helpers/harness.js';

/** Generous: the server is configured to give up after 1 s; a slow shared host must not fail the test. */
const ANSWER_BOUND_MS = 8000;

interface RawAnswer {
  status: number | null;
  headers: string;
  body: string;
  /** Milliseconds until the server closed the connection (or the bound passed). */
  elapsedMs: number;
  closed: boolean;
}

/** Write `chunks` on a fresh connection, keep it open, and collect what the server answers until it closes. */
function rawRequest(url: string, chunks: Array<string | Buffer>, boundMs = ANSWER_BOUND_MS): Promise<RawAnswer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const started = Date.now();
    const socket = connect({ host: hostname, port: Number(port) });
    const received: Buffer[] = [];
    let settled = false;
    const finish = (closed: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const text = Buffer.concat(received).toString('utf8');
      const [head = '', body = ''] = text.split('\r\n\r\n', 2);
      const status = /^HTTP\/1\.1 (\d{3})/.exec(head)?.[1];
      resolve({ status: status ? Number(status) : null, headers: head, body, elapsedMs: Date.now() - started, closed });
    };
    const timer = setTimeout(() => finish(false), boundMs);
    socket.on('data', (data: Buffer) => received.push(data));
    socket.on('close', () => finish(true));
    socket.on('error', () => finish(true));
    socket.on('connect', () => {
      for (const chunk of chunks) socket.write(chunk);
    });
  });
}

function jsonError(answer: RawAnswer): { error: string; detail: string } {
  const body = JSON.parse(answer.body) as { error: unknown; detail: unknown };
  expect(typeof body.error).toBe('string');
  expect(typeof body.detail).toBe('string');
  return body as { error: string; detail: string };
}

describe(`integers and booleans in query strings (${TEST_DIALECT})`, () => {
  let h: Harness;
  let apiKey: Record<string, string>;
  let sessionHeaders: Record<string, string>;

  beforeAll(async () => {
    h = await startHarness();
    const acme = await createTenant(h);
    apiKey = bearer(acme.apiKey);
    sessionHeaders = session(await login(h, acme.ownerEmail, acme.password));
  });
  afterAll(async () => h.close());

  const lists: Array<[string, () => Record<string, string>]> = [
    ['/inbox', () => apiKey],
    ['/threads', () => apiKey],
    ['/app/api/messages', () => sessionHeaders],
    ['/app/api/threads', () => sessionHeaders],
    ['/app/api/lists/inbound/block', () => sessionHeaders],
    ['/app/api/sent', () => sessionHeaders],
    ['/app/api/drafts', () => sessionHeaders],
  ];

  it('an offset past what a database holds answers 400 on every list route, the largest taken answers a page', async () => {
    for (const [path, headers] of lists) {
      for (const offset of ['1e19', '9223372036854775807', 'Infinity', '-Infinity', 'NaN', String(MAX_OFFSET + 1), '99999999999999999999999']) {
        const res = await h.app.inject({ method: 'GET', url: `${path}?offset=${offset}`, headers: headers() });
        expect(errorOf(res), `${path}?offset=${offset}`).toMatchObject({ status: 400, error: 'invalid_request' });
      }
      const last = await h.app.inject({ method: 'GET', url: `${path}?offset=${MAX_OFFSET}`, headers: headers() });
      expect(last.statusCode, path).toBe(200);
      expect(last.json<{ offset: number }>().offset).toBe(MAX_OFFSET);
    }
  });

  it('integers parse strictly: only plain decimal digits', async () => {
    for (const limit of ['0x10', '0b1', '0o7', '+5', '%205', '5%20', '5.0', '1e1', '05', '', '5abc', '٥']) {
      const res = await h.app.inject({ method: 'GET', url: `/inbox?limit=${limit}`, headers: apiKey });
      expect(errorOf(res), `limit=${limit}`).toMatchObject({ status: 400, error: 'invalid_request' });
    }
    for (const offset of ['0x10', '+5', '%205', '0b1']) {
      const res = await h.app.inject({ method: 'GET', url: `/app/api/messages?offset=${offset}`, headers: sessionHeaders });
      expect(errorOf(res), `offset=${offset}`).toMatchObject({ status: 400, error: 'invalid_request' });
    }
    const ok = await h.app.inject({ method: 'GET', url: '/inbox?limit=16&offset=0', headers: apiKey });
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toMatchObject({ limit: 16, offset: 0 });
    // A repeated parameter is no integer either.
    expect((await h.app.inject({ method: 'GET', url: '/inbox?limit=5&limit=6', headers: apiKey })).statusCode).toBe(400);
  });

  it('booleans are exactly true or false', async () => {
    for (const unread of ['yes', '1', '0', 'TRUE', 'False', '', ' true']) {
      const res = await h.app.inject({ method: 'GET', url: `/app/api/messages?unread=${encodeURIComponent(unread)}`, headers: sessionHeaders });
      expect(errorOf(res), `unread=${unread}`).toMatchObject({ status: 400, error: 'invalid_request' });
    }
    for (const unread of ['true', 'false']) {
      expect((await h.app.inject({ method: 'GET', url: `/app/api/messages?unread=${unread}`, headers: sessionHeaders })).statusCode).toBe(200);
    }
  });
});

describe(`errors before a route, and slow clients (${TEST_DIALECT})`, () => {
  let h: Harness;
  let url: string;

  beforeAll(async () => {
    h = await startHarness({ MAILROOM_HTTP_REQUEST_TIMEOUT_MS: '1000', MAILROOM_HTTP_HEADERS_TIMEOUT_MS: '500', MAILROOM_HTTP_KEEPALIVE_TIMEOUT_MS: '1000' });
    url = await h.app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => h.close());

  it('headers over the limit answer 431 with the error body', async () => {
    const answer = await rawRequest(url, [`GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(40 * 1024)}\r\n\r\n`]);
    expect(answer.status).toBe(431);
    expect(answer.headers.toLowerCase()).toContain('content-type: application/json');
    expect(jsonError(answer).error).toBe('headers_too_large');
  });

  it('a request that is not HTTP answers 400 with the error body', async () => {
    const answer = await rawRequest(url, ['GET /health HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n']);
    expect(answer.status).toBe(400);
    expect(jsonError(answer).error).toBe('bad_request');
  });

  it('broken percent-encoding and over-long path parameters answer with the error body', async () => {
    const broken = await fetch(`${url}/mailboxes/%E0%A4%A`);
    expect(broken.status).toBe(400);
    expect(await broken.json()).toMatchObject({ error: 'invalid_url' });
    const long = await fetch(`${url}/mailboxes/${'a'.repeat(600)}`);
    expect(long.status).toBe(414);
    expect(await long.json()).toMatchObject({ error: 'uri_too_long' });
    const unknown = await fetch(`${url}/no-such-route`);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ error: 'not_found' });
  });

  it('a body shorter than its Content-Length is answered 408 and closed within the request time-out', async () => {
    const answer = await rawRequest(url, [
      'POST /app/api/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"email":',
    ]);
    expect(answer.closed).toBe(true);
    expect(answer.elapsedMs).toBeLessThan(ANSWER_BOUND_MS);
    expect(answer.status).toBe(408);
    expect(jsonError(answer).error).toBe('request_timeout');
  });

  it('headers that never finish are answered 408 and closed within the headers time-out', async () => {
    const answer = await rawRequest(url, ['GET /health HTTP/1.1\r\nHost: x\r\n']);
    expect(answer.closed).toBe(true);
    expect(answer.elapsedMs).toBeLessThan(ANSWER_BOUND_MS);
    expect(answer.status).toBe(408);
    expect(jsonError(answer).error).toBe('request_timeout');
  });

  it('an idle keep-alive connection is closed after the keep-alive time-out', async () => {
    const answer = await rawRequest(url, ['GET /health HTTP/1.1\r\nHost: x\r\n\r\n']);
    expect(answer.status).toBe(200);
    expect(answer.closed).toBe(true);
    expect(answer.elapsedMs).toBeLessThan(ANSWER_BOUND_MS);
  });
});

describe(`a request that arrives while the server closes (${TEST_DIALECT})`, () => {
  it('answers 503 with the error body', async () => {
    const h = await startHarness();
    try {
      const url = await h.app.listen({ host: '127.0.0.1', port: 0 });
      const { hostname, port } = new URL(url);
      const socket = connect({ host: hostname, port: Number(port) });
      let received = '';
      socket.on('data', (data: Buffer) => (received += data.toString('utf8')));
      const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
      await new Promise<void>((resolve) => socket.on('connect', () => resolve()));
      // A request in flight (half its body sent) keeps the connection busy, so closing does not drop it.
      const body = JSON.stringify({ email: 'nobody@example.com', password: 'x' });
      socket.write(`POST /app/api/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`);
      await new Promise((resolve) => setTimeout(resolve, 500));
      const closing = h.app.close();
      await new Promise((resolve) => setTimeout(resolve, 500));
      // The rest of the body, and right behind it a second request on the same connection.
      socket.write(`${body.slice(5)}GET /health HTTP/1.1\r\nHost: x\r\n\r\n`);
      await closed;
      await closing;
      const answers = received.split(/(?=HTTP\/1\.1 )/);
      expect(answers[0]).toMatch(/^HTTP\/1\.1 401 /);
      expect(answers[1]).toMatch(/^HTTP\/1\.1 503 /);
      expect(JSON.parse(answers[1]!.split('\r\n\r\n')[1]!)).toMatchObject({ error: 'shutting_down' });
    } finally {
      await h.close();
    }
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asWork } from '../src/db/tables.js';
import { createTenant, login, session, startHarness, type Harness, type Tenant } from './helpers/harness.js';
import { spawn } from 'node:child_process';
import { BIN, ROOT } from './helpers/cli.js';
import { cliUser, listen } from './helpers/cli-client.js';
import { TEST_SERVICE_ENV } from './helpers/service-env.js';
import { eventsOf, openStream, type SseClient } from './helpers/sse.js';

describe('GET /app/api/events/stream', () => {
  let h: Harness;
  let base: string;
  let acme: Tenant;
  let other: Tenant;
  let token: string;
  let otherToken: string;
  const streams: SseClient[] = [];

  beforeAll(async () => {
    h = await startHarness({ MAILROOM_EVENT_HEARTBEAT_MS: '150' });
    base = await listen(h.app);
    acme = await createTenant(h, 'Acme');
    other = await createTenant(h, 'Other');
    token = await login(h, acme.ownerEmail, acme.password);
    otherToken = await login(h, other.ownerEmail, other.password);
  });
  afterAll(async () => {
    for (const s of streams) s.close();
    await h.close();
  });

  async function open(tokenOf: string, headers: Record<string, string> = {}, query = ''): Promise<SseClient> {
    const stream = await openStream(`${base}/app/api/events/stream${query}`, { ...session(tokenOf), ...headers });
    streams.push(stream);
    // The first comment proves the follower is in place before the test commits anything.
    await stream.waitFor((m) => m.some((x) => x.comment === 'connected'));
    return stream;
  }

  let n = 0;
  /** The payload the events service stored for each event emitted here, by id. */
  const storedPayloads = new Map<string, string>();
  async function emit(workspaceId: string): Promise<string> {
    n += 1;
    const event = await h.services.database.db
      .transaction()
      .execute((trx) => h.services.events.emit(asWork(trx), { workspaceId, type: 'domain.verified', data: { domain: `d${n}.example` } }));
    storedPayloads.set(event.id, event.payload);
    return event.id;
  }

  it('answers 401 without a session', async () => {
    const res = await fetch(`${base}/app/api/events/stream`);
    expect(res.status).toBe(401);
    await res.text();
  });

  it('streams an event committed after connecting, with its id, type and webhook payload', async () => {
    const stream = await open(token);
    expect(stream.status).toBe(200);
    const id = await emit(acme.workspaceId);
    const [message] = eventsOf(await stream.waitFor((m) => eventsOf(m).length >= 1));
    expect(message!.id).toBe(id);
    expect(message!.event).toBe('domain.verified');
    const payload = JSON.parse(message!.data!) as Record<string, unknown>;
    expect(payload).toMatchObject({ event_id: id, event_type: 'domain.verified', workspace_id: acme.workspaceId });
    expect(message!.data).toBe(storedPayloads.get(id));
    stream.close();
  });

  it('never shows another workspace\'s events', async () => {
    const mine = await open(token);
    const theirs = await open(otherToken);
    await emit(other.workspaceId);
    const id = await emit(acme.workspaceId);
    await mine.waitFor((m) => eventsOf(m).some((x) => x.id === id));
    await theirs.waitFor((m) => eventsOf(m).length >= 1);
    expect(eventsOf(mine.messages).map((m) => m.id)).toEqual([id]);
    expect(eventsOf(theirs.messages).every((m) => (JSON.parse(m.data!) as { workspace_id: string }).workspace_id === other.workspaceId)).toBe(true);
    mine.close();
    theirs.close();
  });

  it('resumes after Last-Event-ID: the missed events once, in order, then live ones', async () => {
    const first = await open(token);
    const seen = await emit(acme.workspaceId);
    await first.waitFor((m) => eventsOf(m).some((x) => x.id === seen));
    first.close();
    const missed = [await emit(acme.workspaceId), await emit(acme.workspaceId), await emit(acme.workspaceId)];
    const resumed = await open(token, { 'last-event-id': seen });
    await resumed.waitFor((m) => eventsOf(m).length >= 3);
    const live = await emit(acme.workspaceId);
    await resumed.waitFor((m) => eventsOf(m).some((x) => x.id === live));
    expect(eventsOf(resumed.messages).map((m) => m.id)).toEqual([...missed, live]);
    resumed.close();

    // The query parameter does the same for clients that cannot set headers.
    const byQuery = await open(token, {}, `?last_event_id=${missed[1]}`);
    await byQuery.waitFor((m) => eventsOf(m).length >= 2);
    expect(eventsOf(byQuery.messages).map((m) => m.id)).toEqual([missed[2], live]);
    byQuery.close();
  });

  it('is in the OpenAPI document as text/event-stream', async () => {
    const doc = (await h.app.inject({ method: 'GET', url: '/openapi.json' })).json<{ paths: Record<string, { get?: { responses: Record<string, { content?: Record<string, unknown> }> } }> }>();
    expect(Object.keys(doc.paths['/app/api/events/stream']!.get!.responses['200']!.content!)).toEqual(['text/event-stream']);
  });

  it('a reader that is full gets nothing more until it drains, then the rest from the table, in order; the others keep receiving', async () => {
    const me = await h.services.tenancy.auth.authenticateSession(token);
    const grant = { sessionId: me.sessionId, userId: me.userId, workspaceId: acme.workspaceId, role: 'owner' };
    const got: string[] = [];
    const others: string[] = [];
    let room = 3;
    const sink = (write: (id: string) => boolean) => ({ write: (event: { id: string }) => write(event.id), ping: () => undefined, end: () => undefined });
    const follower = await h.services.eventStream.admit(grant).follow(
      undefined,
      sink((id) => {
        got.push(id);
        room -= 1;
        return room > 0;
      }),
    );
    const other = await h.services.eventStream.admit(grant).follow(undefined, sink((id) => others.push(id) > 0));
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) ids.push(await emit(acme.workspaceId));
    await expect.poll(() => others.length).toBe(10);
    expect(others).toEqual(ids);
    expect(got).toEqual(ids.slice(0, 3));
    room = Infinity;
    follower.resume();
    await expect.poll(() => got.length).toBe(10);
    expect(got).toEqual(ids);
    // Back in the shared read: a later event reaches both once.
    const later = await emit(acme.workspaceId);
    await expect.poll(() => got.length + others.length).toBe(22);
    expect(got.at(-1)).toBe(later);
    expect(others.at(-1)).toBe(later);
    follower.close();
    other.close();
  });

  it('sends heartbeat comments', async () => {
    const stream = await open(token);
    await stream.waitFor((m) => m.some((x) => x.comment === 'ping'), 3000);
    stream.close();
  });

  it('mailroom watch --json prints each event as one line of JSON and exits 0 on SIGINT', async () => {
    const user = cliUser(base);
    expect((await user.login(acme.ownerEmail, acme.password)).code).toBe(0);
    const child = spawn(process.execPath, [BIN, 'watch', '--json'], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...TEST_SERVICE_ENV, ...user.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    // The command follows from the moment it connects: commit until one event shows.
    const emitted: string[] = [];
    for (let i = 0; i < 100 && !out.includes('\n'); i++) {
      emitted.push(await emit(acme.workspaceId));
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const line = JSON.parse(out.split('\n')[0]!) as { event_id: string; event_type: string; workspace_id: string };
    expect(emitted).toContain(line.event_id);
    expect(line).toMatchObject({ event_type: 'domain.verified', workspace_id: acme.workspaceId });
    child.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(err).toBe('');
  });

  it('outlives the HTTP request and keep-alive time-outs (they bound reading a request, not a response)', async () => {
    const h2 = await startHarness({ MAILROOM_HTTP_REQUEST_TIMEOUT_MS: '200', MAILROOM_HTTP_HEADERS_TIMEOUT_MS: '200', MAILROOM_HTTP_KEEPALIVE_TIMEOUT_MS: '200' });
    try {
      const base2 = await listen(h2.app);
      const t = await createTenant(h2, 'Long');
      const stream = await openStream(`${base2}/app/api/events/stream`, session(await login(h2, t.ownerEmail, t.password)));
      streams.push(stream);
      await stream.waitFor((m) => m.some((x) => x.comment === 'connected'));
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const event = await h2.services.database.db
        .transaction()
        .execute((trx) => h2.services.events.emit(asWork(trx), { workspaceId: t.workspaceId, type: 'domain.verified', data: { domain: 'late.example' } }));
      await stream.waitFor((m) => eventsOf(m).some((x) => x.id === event.id));
      stream.close();
    } finally {
      await h2.close();
    }
  });

  it('a stream left open does not hold the server\'s shutdown', async () => {
    const h2 = await startHarness();
    const base2 = await listen(h2.app);
    const t = await createTenant(h2, 'Closing');
    const tok = await login(h2, t.ownerEmail, t.password);
    const stream = await openStream(`${base2}/app/api/events/stream`, session(tok));
    await stream.waitFor((m) => m.some((x) => x.comment === 'connected'));
    const started = Date.now();
    await h2.close();
    expect(Date.now() - started).toBeLessThan(3000);
    stream.close();
  });
});

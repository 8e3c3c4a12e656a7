import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asWork } from '../src/db/tables.js';
import { SESSION_IDLE_MS } from '../src/modules/tenancy/auth.service.js';
import { listen } from './helpers/cli-client.js';
import { TEST_DIALECT } from './helpers/database.js';
import { createTenant, login, memberSession, session, startHarness, type Harness, type Tenant } from './helpers/harness.js';
import { eventsOf, openStream, type SseClient } from './helpers/sse.js';

/** One harness's stream plumbing: open a stream (waiting for its first comment when it is admitted), commit events. */
function streamsOf(get: () => { h: Harness; base: string }) {
  const opened: SseClient[] = [];
  let n = 0;
  return {
    opened,
    async open(token: string, headers: Record<string, string> = {}): Promise<SseClient> {
      const { base } = get();
      const stream = await openStream(`${base}/app/api/events/stream`, { ...session(token), ...headers });
      opened.push(stream);
      if (stream.status === 200) await stream.waitFor((m) => m.some((x) => x.comment === 'connected'));
      else await stream.ended;
      return stream;
    },
    async emit(workspaceId: string): Promise<string> {
      const { h } = get();
      n += 1;
      const event = await h.services.database.db
        .transaction()
        .execute((trx) => h.services.events.emit(asWork(trx), { workspaceId, type: 'domain.verified', data: { domain: `d${n}.example` } }));
      return event.id;
    },
    closeAll(): void {
      for (const s of opened.splice(0)) s.close();
    },
  };
}

const ended = (stream: SseClient): Promise<boolean> =>
  Promise.race([stream.ended.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 5000))]);

describe(`event streams end with their credential (${TEST_DIALECT})`, () => {
  let h: Harness;
  let base: string;
  let f: Tenant;
  let g: Tenant;
  let gToken: string;
  // A heartbeat far beyond the test: only the in-process signal can close these streams in time.
  const s = streamsOf(() => ({ h, base }));

  beforeAll(async () => {
    h = await startHarness({ MAILROOM_EVENT_HEARTBEAT_MS: '600000' });
    base = await listen(h.app);
    f = await createTenant(h, 'F');
    g = await createTenant(h, 'G');
    gToken = await login(h, g.ownerEmail, g.password);
  });
  afterAll(async () => {
    s.closeAll();
    await h.close();
  });

  /** The other workspace's stream is untouched: still open, and it receives what G commits next. */
  async function gStillLive(gStream: SseClient): Promise<void> {
    const id = await s.emit(g.workspaceId);
    await gStream.waitFor((m) => eventsOf(m).some((x) => x.id === id));
  }

  it('logout closes the session\'s streams; the other workspace\'s stream stays and keeps receiving', async () => {
    const token = await login(h, f.ownerEmail, f.password);
    const [one, two] = [await s.open(token), await s.open(token)];
    const gStream = await s.open(gToken);
    expect((await h.app.inject({ method: 'POST', url: '/app/api/logout', headers: session(token) })).statusCode).toBe(200);
    expect(await ended(one)).toBe(true);
    expect(await ended(two)).toBe(true);
    await gStillLive(gStream);
    gStream.close();
  });

  it('a password change closes the streams of the user\'s other sessions, not those of the session that asked', async () => {
    const laptop = await login(h, f.ownerEmail, f.password);
    const phone = await login(h, f.ownerEmail, f.password);
    const laptopStream = await s.open(laptop);
    const phoneStream = await s.open(phone);
    const gStream = await s.open(gToken);
    const changed = await h.app.inject({ method: 'POST', url: '/app/api/session/password', headers: session(phone), payload: { current_password: f.password, new_password: 'a-brand-new-password' } });
    expect(changed.statusCode).toBe(200);
    f.password = 'a-brand-new-password';
    expect(await ended(laptopStream)).toBe(true);
    const id = await s.emit(f.workspaceId);
    await phoneStream.waitFor((m) => eventsOf(m).some((x) => x.id === id));
    await gStillLive(gStream);
    phoneStream.close();
    gStream.close();
  });

  it('removing a member closes that member\'s streams; the owner\'s stays', async () => {
    const owner = await login(h, f.ownerEmail, f.password);
    const member = await memberSession(h, f.workspaceId, 'member');
    const memberUser = await h.services.tenancy.auth.authenticateSession(member.token);
    const memberStream = await s.open(member.token);
    const ownerStream = await s.open(owner);
    const gStream = await s.open(gToken);
    expect((await h.app.inject({ method: 'DELETE', url: `/app/api/members/${memberUser.userId}`, headers: session(owner) })).statusCode).toBe(200);
    expect(await ended(memberStream)).toBe(true);
    const id = await s.emit(f.workspaceId);
    await ownerStream.waitFor((m) => eventsOf(m).some((x) => x.id === id));
    await gStillLive(gStream);
    ownerStream.close();
    gStream.close();
  });

  it('a role change closes the member\'s streams; a new one opens with the new role', async () => {
    const owner = await login(h, f.ownerEmail, f.password);
    const member = await memberSession(h, f.workspaceId, 'member');
    const memberUser = await h.services.tenancy.auth.authenticateSession(member.token);
    const memberStream = await s.open(member.token);
    const gStream = await s.open(gToken);
    const patched = await h.app.inject({ method: 'PATCH', url: `/app/api/members/${memberUser.userId}`, headers: session(owner), payload: { role: 'admin' } });
    expect(patched.statusCode).toBe(200);
    expect(await ended(memberStream)).toBe(true);
    const again = await s.open(member.token);
    expect(again.status).toBe(200);
    const id = await s.emit(f.workspaceId);
    await again.waitFor((m) => eventsOf(m).some((x) => x.id === id));
    await gStillLive(gStream);
    again.close();
    gStream.close();
  });

  it('a workspace\'s streams share one read of the events table per change, and a resumed stream joins it without a gap or a repeat', async () => {
    const tokens: string[] = [];
    for (let i = 0; i < 4; i++) tokens.push(await login(h, f.ownerEmail, f.password));
    const live: SseClient[] = [];
    for (let i = 0; i < 16; i++) live.push(await s.open(tokens[i % 4]!));
    const gStream = await s.open(gToken);
    const before = h.services.eventStream.stats().reads;
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push(await s.emit(f.workspaceId));
      // Each change on its own: every stream has it before the next commits.
      for (const stream of live) await stream.waitFor((m) => eventsOf(m).some((x) => x.id === ids[i]));
    }
    const reads = h.services.eventStream.stats().reads - before;
    // Reading alone, each stream would read each change once at least (80 reads). SQLite: one read per change.
    // PostgreSQL also asks whether an older transaction holds events back, and reads again when one does (at
    // most a few times per change, however many streams there are).
    if (TEST_DIALECT === 'postgres') expect(reads).toBeLessThan((live.length * ids.length) / 2);
    else expect(reads).toBeLessThanOrEqual(ids.length + 1); // + the feed's 15 s safety read, should it fall here
    for (const stream of live) expect(eventsOf(stream.messages).map((m) => m.id)).toEqual(ids);

    // Resuming from the second event while more commit: the backlog alone, then the shared read, each event once.
    const resumed = s.open(tokens[0]!, { 'last-event-id': ids[1]! });
    const more: string[] = [];
    for (let i = 0; i < 6; i++) more.push(await s.emit(f.workspaceId));
    const stream = await resumed;
    const last = more.at(-1)!;
    await stream.waitFor((m) => eventsOf(m).some((x) => x.id === last));
    await live[0]!.waitFor((m) => eventsOf(m).some((x) => x.id === last));
    expect(eventsOf(stream.messages).map((m) => m.id)).toEqual([...ids.slice(2), ...more]);
    expect(eventsOf(live[0]!.messages).map((m) => m.id)).toEqual([...ids, ...more]);
    expect(eventsOf(gStream.messages)).toEqual([]);
    for (const x of [...live, stream, gStream]) x.close();
  });
});

describe(`event streams: heartbeat checks and caps (${TEST_DIALECT})`, () => {
  let h: Harness;
  let base: string;
  let f: Tenant;
  let g: Tenant;
  const s = streamsOf(() => ({ h, base }));

  beforeAll(async () => {
    h = await startHarness({
      MAILROOM_EVENT_HEARTBEAT_MS: '200',
      MAILROOM_EVENT_STREAMS_PER_SESSION: '3',
      MAILROOM_EVENT_STREAMS_PER_WORKSPACE: '5',
      MAILROOM_EVENT_STREAMS_MAX: '8',
    });
    base = await listen(h.app);
    f = await createTenant(h, 'F');
    g = await createTenant(h, 'G');
  });
  afterAll(async () => {
    s.closeAll();
    await h.close();
  });

  it('a session that expires while its stream is open: the next heartbeat closes the stream', async () => {
    const fToken = await login(h, f.ownerEmail, f.password);
    const gToken = await login(h, g.ownerEmail, g.password);
    const fStream = await s.open(fToken);
    const gStream = await s.open(gToken);
    // G keeps using the app, F does not: F's session reaches its idle limit, G's does not.
    h.clock.advance(SESSION_IDLE_MS - 60_000);
    expect((await h.app.inject({ method: 'GET', url: '/app/api/session', headers: session(gToken) })).statusCode).toBe(200);
    h.clock.advance(120_000);
    expect((await h.app.inject({ method: 'GET', url: '/app/api/session', headers: session(fToken) })).statusCode).toBe(401);
    expect(await ended(fStream)).toBe(true);
    const id = await s.emit(g.workspaceId);
    await gStream.waitFor((m) => eventsOf(m).some((x) => x.id === id));
    gStream.close();
    await expect.poll(() => h.services.eventStream.stats().open).toBe(0);
  });

  it('a flood of streams from one workspace stops at its caps (429), and the other workspace still opens one', async () => {
    const first = await login(h, f.ownerEmail, f.password);
    const flood = await Promise.all(Array.from({ length: 20 }, () => s.open(first)));
    expect(flood.filter((x) => x.status === 200)).toHaveLength(3);
    const refused = flood.find((x) => x.status === 429)!;
    expect(JSON.parse(refused.text)).toMatchObject({ error: 'session_stream_limit' });

    // More sessions of the same workspace: five streams in all, then the workspace's cap.
    const more = await Promise.all(Array.from({ length: 3 }, () => login(h, f.ownerEmail, f.password)));
    const second = await Promise.all(more.flatMap((token) => [s.open(token), s.open(token)]));
    expect(second.filter((x) => x.status === 200)).toHaveLength(2);
    const overWorkspace = second.find((x) => x.status === 429)!;
    expect(JSON.parse(overWorkspace.text)).toMatchObject({ error: 'workspace_stream_limit' });

    const gToken = await login(h, g.ownerEmail, g.password);
    const gStreams = [await s.open(gToken), await s.open(gToken), await s.open(gToken)];
    expect(gStreams.map((x) => x.status)).toEqual([200, 200, 200]);
    const id = await s.emit(g.workspaceId);
    await gStreams[0]!.waitFor((m) => eventsOf(m).some((x) => x.id === id));

    // The process holds 8: a third workspace is told to come back later.
    const third = await createTenant(h, 'H');
    const full = await s.open(await login(h, third.ownerEmail, third.password));
    expect(full.status).toBe(503);
    expect(JSON.parse(full.text)).toMatchObject({ error: 'server_stream_limit' });

    // A closed stream gives its slot back.
    flood.find((x) => x.status === 200)!.close();
    await expect.poll(() => h.services.eventStream.stats().open).toBe(7);
    expect((await s.open(first)).status).toBe(200);
    s.closeAll();
  });
});

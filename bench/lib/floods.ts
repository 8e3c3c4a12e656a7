import { request as httpRequest, type ClientRequest, createServer, type IncomingMessage, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import nodemailer from 'nodemailer';
import { request } from 'undici';
import type { BenchDatabase } from './databases.js';
import { fillMailbox } from './fill.js';
import { freeLoopbackPort } from './processes.js';
import type { Scope } from './scope.js';
import { benchRows } from './store.js';
import type { SuiteContext } from './suite.js';
import { replyReader } from './tenant-probes.js';

/**
 * One workspace (the attacker) flooding a shared resource of the service, from the bench process, until stopped.
 * Answers a fair service gives a flood (429, 503 with Retry-After, 421) are the flood's outcomes, counted by
 * status, never a failure of the bench: what is measured is the other workspace (tenant-probes.ts).
 */
export interface Flood {
  name: string;
  /** What it does, for the log. */
  describe: string;
  /** Service settings the case needs (e.g. the default SMTP session limits instead of the bench's raised ones). */
  env?: Record<string, string>;
  /** Work before the idle window (filling a mailbox, writing events); done on the case's own service. */
  prepare?(attacker: FloodTarget): Promise<void>;
  start(attacker: FloodTarget): RunningFlood;
}

export interface RunningFlood {
  /** Resolves once the flood is at full strength (all replays asked for, all sessions opened), if it builds up. */
  ready?: Promise<void>;
  /** Stop generating, end what is open, and report the outcomes by status. */
  stop(): Promise<Record<string, number>>;
}

/** The attacker's side of the service. */
export interface FloodTarget {
  context: SuiteContext;
  scope: Scope;
  database: BenchDatabase;
  url: string;
  smtpPort: number;
  apiKey: string;
  /** A session of the attacker workspace's owner (X-Service-Session). */
  session: string;
  workspaceId: string;
  mailbox: string;
  signal: AbortSignal;
}

const MiB = 1024 * 1024;
/** Any one flood request is dropped after this long (counted as `timeout`). */
const FLOOD_REQUEST_TIMEOUT_MS = 120_000;
/** A flood loop that got a refusal waits this long before the next request, so it does not spin (an attacker would not wait more). */
const REFUSED_PAUSE_MS = 50;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves once `done()` holds (looked at every 100 ms). */
async function until(done: () => boolean): Promise<void> {
  while (!done()) await sleep(100);
}

/** Outcomes by status, and loops that run until stopped. */
function outcomes() {
  const counts: Record<string, number> = {};
  let running = true;
  const note = (key: string | number) => {
    counts[String(key)] = (counts[String(key)] ?? 0) + 1;
  };
  const reasonOf = (err: unknown) => {
    if (!running) return 'stopped by the bench';
    if (!(err instanceof Error)) return 'error';
    return err.name === 'TimeoutError' ? 'timeout' : `error ${(err as { code?: string }).code ?? err.message.slice(0, 40)}`;
  };
  /** `loops` copies of `body` until stopped; each call's status is counted. */
  const run = (loops: number, body: (i: number) => Promise<number | string>) =>
    Promise.all(
      Array.from({ length: loops }, async (_, loop) => {
        for (let i = loop; running; i += loops) {
          let outcome: number | string;
          try {
            outcome = await body(i);
          } catch (err) {
            outcome = reasonOf(err);
          }
          note(outcome);
          if (typeof outcome !== 'number' || outcome >= 300) await sleep(REFUSED_PAUSE_MS);
        }
      }),
    );
  return {
    counts,
    note,
    reasonOf,
    run,
    get running() {
      return running;
    },
    halt() {
      running = false;
    },
  };
}

async function call(target: FloodTarget, path: string, init: { method: 'GET' | 'POST'; body?: string | Buffer; session?: boolean }, stop: AbortSignal): Promise<number> {
  const credential = init.session ? { 'x-service-session': target.session } : { authorization: `Bearer ${target.apiKey}` };
  const res = await request(`${target.url}${path}`, {
    method: init.method,
    headers: { ...credential, ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(init.body !== undefined ? { body: init.body } : {}),
    bodyTimeout: FLOOD_REQUEST_TIMEOUT_MS,
    headersTimeout: FLOOD_REQUEST_TIMEOUT_MS,
    signal: AbortSignal.any([target.signal, stop, AbortSignal.timeout(FLOOD_REQUEST_TIMEOUT_MS)]),
  });
  await res.body.text();
  return res.statusCode;
}

/** Messages in the searched mailbox: "a few thousand". */
const SEARCH_MESSAGES = 3000;
/** Concurrent search loops of the attacker. */
const SEARCH_LOOPS = 3;
/** Sixteen one-letter prefixes joined by OR: each matches most of the index. */
const SEARCH_QUERY = 'abcdefghijklmnop'.split('').map((c) => `${c}*`).join(' OR ');

export const searchFlood: Flood = {
  name: 'search',
  describe: `${SEARCH_LOOPS} loops of GET /inbox?q=<16 prefixes OR'ed> over a mailbox of ${SEARCH_MESSAGES} messages`,
  async prepare(target) {
    await fillMailbox(target.context, target.database, target.mailbox, SEARCH_MESSAGES, 600);
  },
  start(target) {
    const o = outcomes();
    const stop = new AbortController();
    const path = `/inbox?limit=50&q=${encodeURIComponent(SEARCH_QUERY)}`;
    const loops = o.run(SEARCH_LOOPS, () => call(target, path, { method: 'GET' }, stop.signal));
    return {
      async stop() {
        o.halt();
        stop.abort();
        await loops;
        return o.counts;
      },
    };
  },
};

/** Endpoints of the attacker pointed at a receiver that never answers, and replays queued to them in all. */
const REPLAY_ENDPOINTS = 5;
const REPLAYS = 2000;
/** Distinct events replayed (each to every endpoint): a service that keeps one pending delivery per event and endpoint still gets ~2,000. */
const REPLAY_EVENTS = REPLAYS / REPLAY_ENDPOINTS;
const REPLAY_LOOPS = 8;

/** An HTTP server that takes every request and never answers; its sockets are destroyed when `scope` closes. */
async function startSilentReceiver(scope: Scope): Promise<string> {
  const sockets = new Set<Socket>();
  const server: Server = createServer(() => undefined);
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  const port = await freeLoopbackPort();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  scope.defer('silent webhook receiver', async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  return `http://127.0.0.1:${port}/never`;
}

/** `count` small messages to the attacker's mailbox over SMTP: its events to replay. */
async function receiveMail(target: FloodTarget, count: number): Promise<void> {
  const transport = nodemailer.createTransport({ host: '127.0.0.1', port: target.smtpPort, secure: false, ignoreTLS: true, pool: true, maxConnections: 4, name: 'attacker.test' });
  try {
    await Promise.all(Array.from({ length: count }, (_, i) => transport.sendMail({ envelope: { from: 'attacker@sender.test', to: [target.mailbox] }, raw: `From: attacker@sender.test\r\nTo: ${target.mailbox}\r\nSubject: event ${i}\r\nMessage-ID: <replay.${i}.${Date.now()}@sender.test>\r\n\r\nAn event to replay.\r\n` })));
  } finally {
    transport.close();
  }
}

const replayState = new WeakMap<FloodTarget, { hooks: string[]; events: string[] }>();

export const replayFlood: Flood = {
  name: 'replay',
  describe: `${REPLAY_ENDPOINTS} webhook endpoints at a receiver that never answers, ${REPLAYS} replays queued (${REPLAY_EVENTS} events × ${REPLAY_ENDPOINTS}, ${REPLAY_LOOPS} at a time)`,
  async prepare(target) {
    await receiveMail(target, REPLAY_EVENTS);
    const events = (await benchRows<{ id: string }>(target.database, { sqlite: 'select id from events where workspace_id = ? order by created_at desc limit ?', postgres: 'select id from events where workspace_id = $1 order by created_at desc limit $2' }, [target.workspaceId, REPLAY_EVENTS])).map((r) => r.id);
    const url = await startSilentReceiver(target.scope);
    const hooks: string[] = [];
    for (let i = 0; i < REPLAY_ENDPOINTS; i++) {
      const res = await request(`${target.url}/app/api/webhooks`, { method: 'POST', headers: { 'x-service-session': target.session, 'content-type': 'application/json' }, body: JSON.stringify({ url: `${url}/${i}` }), signal: target.signal });
      const text = await res.body.text();
      if (res.statusCode !== 201) throw new Error(`POST /app/api/webhooks answered ${res.statusCode}: ${text.slice(0, 200)}`);
      hooks.push((JSON.parse(text) as { webhook_id: string }).webhook_id);
    }
    replayState.set(target, { hooks, events });
  },
  start(target) {
    const state = replayState.get(target);
    if (!state) throw new Error('replay flood: not prepared');
    const o = outcomes();
    const stop = new AbortController();
    const pairs = state.events.flatMap((event) => state.hooks.map((hook) => ({ hook, event })));
    let next = 0;
    // Once all are asked for, the flood is the deliveries hanging on the silent receiver.
    const loops = o.run(REPLAY_LOOPS, async () => {
      const pair = pairs[next++];
      if (!pair) {
        await sleep(100);
        return 'all asked for';
      }
      return call(target, `/app/api/webhooks/${pair.hook}/deliveries/${pair.event}/replay`, { method: 'POST', session: true }, stop.signal);
    });
    return {
      ready: until(() => next >= pairs.length),
      async stop() {
        o.halt();
        stop.abort();
        await loops;
        delete o.counts['all asked for'];
        return o.counts;
      },
    };
  },
};

/** A file of `bytes` random-looking bytes, base64 (as POST /send takes attachments). */
const fileOf = (bytes: number) => Buffer.alloc(bytes, 'mailroom-bench-flood').toString('base64');
/** Just under the 25 MiB a message's files may total. */
const BIG_FILE = 24 * MiB;
/** Concurrent batch loops, each sending two messages of 18 MiB files: a body of about 49 MiB, under the 50 MiB limit. */
const BIG_BATCHES = 4;
const BATCH_FILE = 18 * MiB;

export const bigBodyFlood: Flood = {
  name: 'big-body',
  describe: `one loop of POST /send with a ${BIG_FILE / MiB} MiB attachment, and ${BIG_BATCHES} loops of POST /send/batch of ~49 MiB (2 × ${BATCH_FILE / MiB} MiB files)`,
  start(target) {
    const o = outcomes();
    const stop = new AbortController();
    const message = (file: string, n: number) => ({ from_mailbox: target.mailbox, to: 'peer@elsewhere.test', subject: `big ${n}`, body: 'Big.', attachments: [{ filename: `big-${n}.bin`, content_type: 'application/octet-stream', content: file }] });
    const single = Buffer.from(JSON.stringify(message(fileOf(BIG_FILE), 0)));
    const batchFile = fileOf(BATCH_FILE);
    const batch = Buffer.from(JSON.stringify({ messages: [message(batchFile, 1), message(batchFile, 2)] }));
    const loops = Promise.all([
      o.run(1, () => call(target, '/send', { method: 'POST', body: single }, stop.signal)),
      o.run(BIG_BATCHES, () => call(target, '/send/batch', { method: 'POST', body: batch }, stop.signal)),
    ]);
    return {
      async stop() {
        o.halt();
        stop.abort();
        await loops;
        return o.counts;
      },
    };
  },
};

/** Event streams one session of the attacker opens (and holds), and how many it has opening at once. */
const STREAMS = 2000;
const STREAM_OPENING = 50;

export const streamFlood: Flood = {
  name: 'streams',
  describe: `one session opens ${STREAMS} GET /app/api/events/stream (${STREAM_OPENING} opening at once) and holds them`,
  start(target) {
    const o = outcomes();
    const open = new Set<ClientRequest>();
    const { hostname, port } = new URL(target.url);
    let opened = 0;
    const openOne = () =>
      new Promise<number | string>((resolve) => {
        const req = httpRequest({ host: hostname, port, path: '/app/api/events/stream', headers: { 'x-service-session': target.session }, agent: false });
        open.add(req);
        req.on('response', (res: IncomingMessage) => {
          res.resume();
          // A stream the service ends (a cap, a credential check) is counted as such.
          res.on('end', () => o.note('ended by the service'));
          if (res.statusCode !== 200) open.delete(req);
          resolve(res.statusCode ?? 'no status');
        });
        req.on('error', (err) => {
          open.delete(req);
          resolve(o.running ? o.reasonOf(err) : 'closed by the bench');
        });
        req.end();
      });
    const loops = o.run(STREAM_OPENING, async () => {
      if (opened >= STREAMS) {
        await sleep(100);
        return 'holding';
      }
      opened += 1;
      return openOne();
    });
    // No `ready`: the opening is part of the flood (each stream is a session check and a registration), so the
    // measurement starts while the streams are still being opened.
    return {
      async stop() {
        o.halt();
        for (const req of open) req.destroy();
        await loops;
        delete o.counts.holding;
        o.counts['held at the end'] = open.size;
        return o.counts;
      },
    };
  },
};

/** SMTP sessions held open with NOOP: from SLOT_ADDRESSES loopback addresses, SLOT_SESSIONS in all. */
const SLOT_ADDRESSES = 10;
const SLOT_SESSIONS = 200;
const NOOP_EVERY_MS = 1000;

/** The session limits the service has by default (the bench raises them for its load; this case must not). */
const DEFAULT_SESSION_LIMITS = { MAILROOM_SMTP_MAX_CLIENTS: '200', MAILROOM_SMTP_MAX_CLIENTS_PER_IP: '20' };

/**
 * One session held with NOOP until `o` stops or the service ends it: `220`, or the refusal (`421`), after which the
 * loop waits a NOOP period before it tries again (it holds slots; it is not a connection flood).
 */
async function holdSession(o: ReturnType<typeof outcomes>, sockets: Set<Socket>, port: number, localAddress: string): Promise<number | string> {
  const socket = connect({ host: '127.0.0.1', port, localAddress });
  socket.setTimeout(30_000);
  sockets.add(socket);
  const replies = replyReader(socket);
  try {
    const greeting = await replies.next();
    if (!greeting.startsWith('220')) {
      await sleep(NOOP_EVERY_MS);
      return greeting.slice(0, 3);
    }
    o.note('220');
    socket.write('EHLO holder.attacker.test\r\n');
    await replies.next();
    while (o.running) {
      await sleep(NOOP_EVERY_MS);
      socket.write('NOOP\r\n');
      const reply = await replies.next();
      if (!reply.startsWith('250')) return `NOOP ${reply.slice(0, 3)}`;
    }
    return 'held to the end';
  } catch (err) {
    return o.running ? `ended by the service (${o.reasonOf(err)})` : 'held to the end';
  } finally {
    sockets.delete(socket);
    socket.destroy();
  }
}

export const smtpSlotFlood: Flood = {
  name: 'smtp-slots',
  describe: `${SLOT_SESSIONS} SMTP sessions from 127.0.0.2–${1 + SLOT_ADDRESSES} kept alive with NOOP every ${NOOP_EVERY_MS / 1000} s (reopened when ended), at the default session limits`,
  env: DEFAULT_SESSION_LIMITS,
  start(target) {
    const o = outcomes();
    const sockets = new Set<Socket>();
    const loops = o.run(SLOT_SESSIONS, (i) => holdSession(o, sockets, target.smtpPort, `127.0.0.${2 + (i % SLOT_ADDRESSES)}`));
    return {
      ready: until(() => (o.counts['220'] ?? 0) + (o.counts['421'] ?? 0) >= SLOT_SESSIONS),
      async stop() {
        o.halt();
        for (const socket of sockets) socket.destroy();
        await loops;
        return o.counts;
      },
    };
  },
};

export const FLOODS: readonly Flood[] = [searchFlood, replayFlood, bigBodyFlood, streamFlood, smtpSlotFlood];

import { connect, type Socket } from 'node:net';
import { request } from 'undici';
import type { Measurement } from './load.js';
import { latencyStats } from './smtp-load.js';
import type { Receiver } from './webhook-receiver.js';

/**
 * What the other workspace sees while one workspace floods the service: four probes, each one request at a time,
 * one every PROBE_INTERVAL_MS, timed by the bench. A probe's failures (a refusal, an error, a time-out) are counted
 * beside its latencies and fail its goal.
 */
export const PROBES = ['inbound SMTP (DATA → 250)', 'POST /send', 'GET /health', 'webhook (event → receiver)'] as const;
export type ProbeName = (typeof PROBES)[number];

/** One request of each probe at most this often: enough samples for a p99 in 10 s, little load of its own. */
const PROBE_INTERVAL_MS = 150;
/** A probe request that takes longer than this is a failure (its goal is 1 s; past this it only ties the probe up). */
const PROBE_TIMEOUT_MS = 30_000;
/** After a window, how long the webhook probe waits for the events of its mail to arrive. */
const WEBHOOK_GRACE_MS = 5_000;

export interface ProbeWindow {
  latenciesMs: number[];
  /** Failures by reason (`421`, `503`, `timeout`, `not delivered`…). */
  failures: Record<string, number>;
  wallMs: number;
}

/** Where the probes go: the other workspace's mailbox, API key and webhook receiver. */
export interface ProbeTarget {
  url: string;
  smtpPort: number;
  /** The address the SMTP probe connects from: outside the flood's addresses and their /24. */
  smtpFrom: string;
  apiKey: string;
  mailbox: string;
  /** The receiver of the workspace's one endpoint (event type `message.received`). */
  receiver: Receiver;
  signal: AbortSignal;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const count = (failures: Record<string, number>, reason: string) => {
  failures[reason] = (failures[reason] ?? 0) + 1;
};
const reasonOf = (err: unknown) => (err instanceof Error ? (err.name === 'TimeoutError' || /timed? ?out/i.test(err.message) ? 'timeout' : err.message.slice(0, 60)) : String(err));

/** `once` again and again, one at a time, at most one every PROBE_INTERVAL_MS, until `until`. */
async function loop(until: number, once: () => Promise<number | string>): Promise<ProbeWindow> {
  const window: ProbeWindow = { latenciesMs: [], failures: {}, wallMs: 0 };
  const started = performance.now();
  while (performance.now() < until) {
    const t = performance.now();
    try {
      const outcome = await once();
      if (typeof outcome === 'number') window.latenciesMs.push(outcome);
      else count(window.failures, outcome);
    } catch (err) {
      count(window.failures, reasonOf(err));
    }
    const wait = PROBE_INTERVAL_MS - (performance.now() - t);
    if (wait > 0) await sleep(wait);
  }
  window.wallMs = performance.now() - started;
  return window;
}

async function timedHttp(url: string, init: { method: 'GET' | 'POST'; headers?: Record<string, string>; body?: string }, ok: number, signal: AbortSignal): Promise<number | string> {
  const t = performance.now();
  const res = await request(url, { ...init, signal: AbortSignal.any([signal, AbortSignal.timeout(PROBE_TIMEOUT_MS)]) });
  await res.body.text();
  return res.statusCode === ok ? performance.now() - t : String(res.statusCode);
}

/**
 * One SMTP transaction on a fresh connection, as a sender would make it; its time from the DATA command to the
 * final reply, or the first reply that refused (`421` at the greeting when the slots are full).
 */
export async function smtpOnce(port: number, localAddress: string, from: string, to: string, body: string): Promise<number | string> {
  const socket = connect({ host: '127.0.0.1', port, localAddress });
  socket.setTimeout(PROBE_TIMEOUT_MS);
  const replies = replyReader(socket);
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    const step = async (line: string | null, expect: string): Promise<string | null> => {
      if (line !== null) socket.write(`${line}\r\n`);
      const reply = await replies.next();
      return reply.startsWith(expect) ? null : reply.slice(0, 3);
    };
    const refused = (await step(null, '220')) ?? (await step('EHLO probe.bench.localhost', '250')) ?? (await step(`MAIL FROM:<${from}>`, '250')) ?? (await step(`RCPT TO:<${to}>`, '250'));
    if (refused) return refused;
    const t = performance.now();
    const notData = await step('DATA', '354');
    if (notData) return notData;
    const notStored = await step(`${body}\r\n.`, '250');
    const ms = performance.now() - t;
    socket.write('QUIT\r\n');
    return notStored ?? ms;
  } finally {
    socket.destroy();
  }
}

/** Complete SMTP replies (the last line of a multi-line one) as they arrive on `socket`. */
export function replyReader(socket: Socket): { next(): Promise<string> } {
  let buffered = '';
  const ready: string[] = [];
  let waiting: { resolve: (line: string) => void; reject: (err: Error) => void } | null = null;
  let failed: Error | null = null;
  const fail = (err: Error) => {
    failed ??= err;
    waiting?.reject(failed);
    waiting = null;
  };
  socket.setEncoding('latin1');
  socket.on('data', (chunk: string) => {
    buffered += chunk;
    for (let nl = buffered.indexOf('\r\n'); nl >= 0; nl = buffered.indexOf('\r\n')) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 2);
      if (line[3] === '-') continue;
      if (waiting) {
        waiting.resolve(line);
        waiting = null;
      } else ready.push(line);
    }
  });
  socket.on('timeout', () => fail(new Error('timeout')));
  socket.on('error', fail);
  socket.on('close', () => fail(new Error('connection closed')));
  return {
    next: () => {
      const line = ready.shift();
      if (line !== undefined) return Promise.resolve(line);
      if (failed) return Promise.reject(failed);
      return new Promise((resolve, reject) => {
        waiting = { resolve, reject };
      });
    },
  };
}

/**
 * The four probes side by side for `seconds`. The webhook probe is the SMTP probe's mail: each stored message is one
 * `message.received` event, timed from its `created_at` to its arrival at the receiver; an event that has not arrived
 * WEBHOOK_GRACE_MS after the window is a failure (`not delivered`).
 */
export async function probeWindow(target: ProbeTarget, seconds: number, tag: string): Promise<Record<ProbeName, ProbeWindow>> {
  await target.receiver.reset();
  const until = performance.now() + seconds * 1000;
  let n = 0;
  const auth = { authorization: `Bearer ${target.apiKey}` };
  const sendBody = JSON.stringify({ from_mailbox: target.mailbox, to: 'peer@elsewhere.test', subject: 'meanwhile', body: 'A plain message sent by the other workspace.' });
  const [smtp, send, health] = await Promise.all([
    loop(until, () => {
      n += 1;
      const body = `From: <probe@sender.test>\r\nTo: <${target.mailbox}>\r\nSubject: probe ${tag} ${n}\r\nMessage-ID: <probe.${tag}.${n}.${Date.now()}@sender.test>\r\nDate: ${new Date().toUTCString()}\r\n\r\nA message from a real sender while another workspace floods the service.`;
      return smtpOnce(target.smtpPort, target.smtpFrom, 'probe@sender.test', target.mailbox, body);
    }),
    loop(until, () => timedHttp(`${target.url}/send`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: sendBody }, 202, target.signal)),
    loop(until, () => timedHttp(`${target.url}/health`, { method: 'GET' }, 200, target.signal)),
  ]);
  const webhook = await webhookWindow(target.receiver, smtp.latenciesMs.length, smtp.wallMs);
  return { 'inbound SMTP (DATA → 250)': smtp, 'POST /send': send, 'GET /health': health, 'webhook (event → receiver)': webhook };
}

async function webhookWindow(receiver: Receiver, stored: number, wallMs: number): Promise<ProbeWindow> {
  const deadline = performance.now() + WEBHOOK_GRACE_MS;
  let stats = await receiver.stats(true);
  while (stats.count < stored && performance.now() < deadline) {
    await sleep(100);
    stats = await receiver.stats(true);
  }
  const failures: Record<string, number> = {};
  if (stats.count < stored) failures['not delivered'] = stored - stats.count;
  if (stored === 0) failures['no mail stored to deliver'] = 1;
  return { latenciesMs: stats.latencies ?? [], failures, wallMs };
}

/** A probe window as a Measurement (for the report's rows): its rate, percentiles and failures. */
export function probeMeasurement(window: ProbeWindow): Measurement {
  const done = window.latenciesMs.length;
  const failed = Object.values(window.failures).reduce((s, v) => s + v, 0);
  return {
    requestsPerSec: done / (window.wallMs / 1000),
    latencyMs: latencyStats(window.latenciesMs),
    totalRequests: done + failed,
    durationS: window.wallMs / 1000,
    connections: 1,
    errors: failed,
    timeouts: window.failures.timeout ?? 0,
    non2xx: 0,
    serverCpuUsPerRequest: null,
    serverCpuUtilization: null,
  };
}

/** `421×3, timeout×1`, or `none`. */
export function describeFailures(failures: Record<string, number>): string {
  const entries = Object.entries(failures);
  return entries.length === 0 ? 'none' : entries.map(([reason, n]) => `${reason}×${n}`).join(', ');
}

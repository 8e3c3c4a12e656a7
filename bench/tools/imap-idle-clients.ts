/**
 * The `imap` suite's idle sessions, as their own process so that what they cost never lands in the server's figures
 * nor in the bench's: raw sockets, a few bytes of state each. Every session logs in, selects INBOX and enters IDLE;
 * then all of them stay there until this process gets SIGTERM.
 *
 *   BENCH_IMAP_PORT         the IMAP port on 127.0.0.1
 *   BENCH_IMAP_USER         the login
 *   BENCH_IMAP_PASSWORD     its password
 *   BENCH_IMAP_SESSIONS     how many sessions
 *   BENCH_IMAP_OPENING      sessions being opened at once (default 100)
 *
 * Prints `ready {"sessions":N,"ms":…}` once every session is in IDLE, `failed <why>` (and exits 1) when one is
 * refused or closed before, or later while they idle.
 */
import { connect, type Socket } from 'node:net';

const port = Number(process.env.BENCH_IMAP_PORT);
const user = process.env.BENCH_IMAP_USER ?? '';
const password = process.env.BENCH_IMAP_PASSWORD ?? '';
const sessions = Number(process.env.BENCH_IMAP_SESSIONS);
const opening = Number(process.env.BENCH_IMAP_OPENING ?? 100);
if (!Number.isInteger(port) || !Number.isInteger(sessions) || sessions < 1 || !user) {
  console.error('imap-idle-clients: set BENCH_IMAP_PORT, BENCH_IMAP_USER, BENCH_IMAP_PASSWORD and BENCH_IMAP_SESSIONS');
  process.exit(2);
}

const quote = (text: string) => `"${text.replace(/["\\]/g, (c) => `\\${c}`)}"`;
/** What each step waits for before the next command. */
const STEPS: ReadonlyArray<{ until: RegExp; then: string | null }> = [
  { until: /^\* OK(?! Waiting)/m, then: `a LOGIN ${quote(user)} ${quote(password)}\r\n` },
  { until: /^a OK/m, then: 'b SELECT INBOX\r\n' },
  { until: /^b OK/m, then: 'c IDLE\r\n' },
  { until: /^\+/m, then: null },
];
const REFUSED = /^(\* BYE|[abc] (NO|BAD))/m;

const open: Socket[] = [];
let idling = 0;
let started = 0;
let finished = false;
const t0 = performance.now();

function fail(why: string): void {
  if (finished) return;
  finished = true;
  process.stdout.write(`failed ${why}\n`);
  for (const socket of open) socket.destroy();
  process.exit(1);
}

/** One session: its steps run on what it has read since the last one; once in IDLE it keeps nothing. */
function openSession(): void {
  started++;
  const socket = connect({ host: '127.0.0.1', port });
  open.push(socket);
  let step = 0;
  let text = '';
  socket.setEncoding('latin1');
  socket.on('data', (chunk: string) => {
    if (step >= STEPS.length) return;
    text += chunk;
    if (REFUSED.test(text)) return fail(`session ${open.length}: ${text.trim().slice(0, 200)}`);
    const { until, then } = STEPS[step]!;
    if (!until.test(text)) return;
    text = '';
    step++;
    if (then !== null) socket.write(then);
    else sessionReady();
  });
  socket.on('error', (error) => fail(`session error: ${error.message}`));
  socket.on('close', () => fail(`a session was closed by the server (${idling} in IDLE)`));
}

function sessionReady(): void {
  idling++;
  if (idling === sessions) {
    process.stdout.write(`ready ${JSON.stringify({ sessions, ms: Math.round(performance.now() - t0) })}\n`);
    return;
  }
  if (started < sessions) openSession();
}

process.on('SIGTERM', () => {
  finished = true;
  for (const socket of open) socket.destroy();
  process.exit(0);
});

for (let i = 0; i < Math.min(opening, sessions); i++) openSession();

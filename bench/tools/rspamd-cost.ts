/**
 * What content scoring costs SMTP ingest: the `smtp` suite side by side (tools/side-by-side.ts, rounds alternated)
 * in three settings of one build: without rspamd, with a private rspamd (Debian's, started as the tests start it),
 * and with that rspamd behind a proxy that holds each answer back (a slow or overloaded rspamd). Prints the
 * side-by-side summary, then per setting the median msg/s and p99 of the service's rows.
 *
 *   nice -n -15 node --import tsx bench/tools/rspamd-cost.ts
 *
 * Settings: BENCH_RSPAMD_DELAY_MS (the slow setting's added delay, default 200), BENCH_RSPAMD_ROUNDS (3), and the
 * smtp suite's own (BENCH_SMTP_CASES, default `reuse`; BENCH_DATABASES, default `sqlite`; BENCH_DURATION_S …).
 */
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { startRspamd } from '../../test/helpers/rspamd.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const KEPT = join(ROOT, 'bench', 'results', 'side-by-side');
const DELAY_MS = Number(process.env.BENCH_RSPAMD_DELAY_MS ?? 200);
const ROUNDS = process.env.BENCH_RSPAMD_ROUNDS ?? '3';
const VARIANTS = ['plain', 'rspamd', 'slow'] as const;

/** An HTTP proxy to `target` that passes each answer on `delayMs` after it came (the request goes on at once). */
async function slowProxy(target: string, delayMs: number): Promise<Server> {
  const to = new URL(target);
  const server = createServer((req, res) => {
    const upstream = request({ host: to.hostname, port: to.port, path: req.url, method: req.method, headers: req.headers }, (answer) => {
      void sleep(delayMs).then(() => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

/** side-by-side.ts as a child (it blocks its own event loop between runs; the proxy here must keep answering). */
async function sideBySide(rspamdUrl: string, slowUrl: string): Promise<void> {
  const args = ['--import', 'tsx', join(ROOT, 'bench', 'tools', 'side-by-side.ts'), '--rounds', ROUNDS, '--suites', 'smtp'];
  args.push('--variant', 'plain', '--variant', `rspamd=ENV=MAILROOM_RSPAMD_URL=${rspamdUrl}`, '--variant', `slow=ENV=MAILROOM_RSPAMD_URL=${slowUrl}`);
  const env = { ...process.env, BENCH_SMTP_CASES: process.env.BENCH_SMTP_CASES ?? 'reuse', BENCH_DATABASES: process.env.BENCH_DATABASES ?? 'sqlite' };
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: 'inherit' });
  await new Promise((resolve) => child.once('exit', resolve));
}

interface Row {
  case: string;
  role: string;
  measurement?: { requestsPerSec: number; latencyMs: { p99: number } };
}

/** Per variant and case: the service's msg/s and p99 in each round, read from the kept results. */
function throughputAndP99(): void {
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)] ?? Number.NaN;
  for (const variant of VARIANTS) {
    const byCase = new Map<string, { rate: number[]; p99: number[] }>();
    for (const file of readdirSync(KEPT).filter((f) => f.startsWith(`smtp.${variant}.`))) {
      const results = (JSON.parse(readFileSync(join(KEPT, file), 'utf8')) as { results: Array<{ rows: Row[] }> }).results;
      for (const row of results.flatMap((r) => r.rows).filter((r) => r.role === 'subject' && r.measurement)) {
        const entry = byCase.get(row.case) ?? { rate: [], p99: [] };
        byCase.set(row.case, entry);
        entry.rate.push(row.measurement!.requestsPerSec);
        entry.p99.push(row.measurement!.latencyMs.p99);
      }
    }
    for (const [name, e] of byCase) console.log(`${variant.padEnd(7)} ${name}: ${median(e.rate).toFixed(0)} msg/s (${e.rate.map(Math.round).join(', ')}), p99 ${median(e.p99).toFixed(0)} ms (${e.p99.map(Math.round).join(', ')})`);
  }
}

const rspamd = await startRspamd();
const slow = await slowProxy(rspamd.url, DELAY_MS);
try {
  await sideBySide(rspamd.url, `http://127.0.0.1:${(slow.address() as AddressInfo).port}`);
  console.log(`\nslow = rspamd answering ${DELAY_MS} ms late; rspamd scanned ${(await rspamd.stat()).scanned} messages in all`);
  throughputAndP99();
} finally {
  slow.close();
  await rspamd.stop();
}

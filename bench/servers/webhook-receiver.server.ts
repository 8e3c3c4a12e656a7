/**
 * The webhook suite's receiver, run as its own process: node:http servers on 127.0.0.1, one per port
 * (one endpoint each, so the service keeps one connection pool per endpoint as it would for distinct
 * receivers), answering every POST with 204 at once after reading the body.
 *
 *   BENCH_RECEIVER_PORTS  comma list of ports on 127.0.0.1
 *
 * For each POST it records the arrival time and, from the body's `created_at` (the event's creation
 * time, ms precision, same machine clock), the event-to-arrival latency. `GET /stats` (any port)
 * answers `{"count","first","last","latencies"?}` (`?latencies=1` adds them) and `POST /reset` starts
 * over. Prints `listening <ports>` when ready.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';

const ports = (process.env.BENCH_RECEIVER_PORTS ?? '').split(',').filter((p) => p !== '').map(Number);
if (ports.length === 0 || ports.some((p) => !Number.isInteger(p) || p <= 0)) {
  console.error('webhook-receiver.server: set BENCH_RECEIVER_PORTS');
  process.exit(2);
}

/** Most latency samples kept (the throughput runs do not need them all). */
const MAX_SAMPLES = 1_000_000;
let count = 0;
let first = 0;
let last = 0;
let latencies: number[] = [];

function handle(req: IncomingMessage, res: ServerResponse): void {
  if (req.method === 'GET' && req.url?.startsWith('/stats')) {
    const body = { count, first, last, ...(req.url.includes('latencies=1') ? { latencies } : {}) };
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
    return;
  }
  if (req.method === 'POST' && req.url === '/reset') {
    count = 0;
    first = 0;
    last = 0;
    latencies = [];
    res.writeHead(204);
    res.end();
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const now = Date.now();
    count++;
    if (first === 0) first = now;
    last = now;
    const match = /"created_at":"([^"]+)"/.exec(Buffer.concat(chunks).toString('utf8'));
    if (match && latencies.length < MAX_SAMPLES) latencies.push(now - Date.parse(match[1]!));
    res.writeHead(204);
    res.end();
  });
}

await Promise.all(
  ports.map(
    (port) =>
      new Promise<void>((resolve, reject) => {
        const server = createServer({ keepAliveTimeout: 30_000 }, handle);
        server.once('error', reject);
        server.listen(port, '127.0.0.1', resolve);
      }),
  ),
);
console.log(`listening ${ports.join(',')}`);
process.on('SIGTERM', () => process.exit(0));

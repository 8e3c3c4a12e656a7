/**
 * The stream suite's baseline, run as its own process: node:http on 127.0.0.1 with no framework, database or
 * session. `GET /stream` answers `text/event-stream` and a `: connected` comment; each `POST /emit` (its body:
 * the `data` object of an event as JSON) writes one event to every open stream at once, framed as the service
 * frames it, its `created_at` taken just before the write, and answers 204. Prints `listening <port>` when ready.
 *
 *   BENCH_BARE_PORT  the port on 127.0.0.1
 */
import { createServer, type ServerResponse } from 'node:http';

const port = Number(process.env.BENCH_BARE_PORT);
if (!Number.isInteger(port) || port <= 0) {
  console.error('bare-sse.server: set BENCH_BARE_PORT');
  process.exit(2);
}

const streams = new Set<ServerResponse>();
let sequence = 0;

const server = createServer({ keepAliveTimeout: 30_000 }, (req, res) => {
  if (req.method === 'GET' && req.url === '/stream') {
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store' });
    res.write(': connected\n\n');
    streams.add(res);
    res.on('close', () => streams.delete(res));
    return;
  }
  if (req.method === 'POST' && req.url === '/emit') {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const id = `evt_bare${String(++sequence).padStart(18, '0')}`;
      const payload = `{"event_id":"${id}","event_type":"message.received","created_at":"${new Date().toISOString()}","workspace_id":"ws_bench","data":${Buffer.concat(chunks).toString('utf8')}}`;
      for (const stream of streams) stream.write(`id: ${id}\nevent: message.received\ndata: ${payload}\n\n`);
      res.writeHead(204);
      res.end();
    });
    return;
  }
  res.writeHead(404);
  res.end();
});
server.listen(port, '127.0.0.1', () => console.log(`listening ${port}`));
process.on('SIGTERM', () => process.exit(0));

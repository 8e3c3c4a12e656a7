/**
 * The baseline of the http and inbox suites, run as its own process: a bare Fastify app (no logger,
 * no hooks, no auth, no database) whose one GET route answers the very JSON document the real service
 * gave. The ratio service ÷ bare is then the cost of everything Mailroom adds.
 *
 *   BENCH_BARE_PORT       port on 127.0.0.1
 *   BENCH_BARE_BODY_FILE  JSON file holding the body to answer
 *   BENCH_BARE_ROUTE      the route's path (default /mailboxes); any query string is accepted
 *   BENCH_BARE_METHOD     GET (default) or POST (the JSON request body is parsed, then ignored)
 *   BENCH_BARE_STATUS     the status answered (default 200)
 */
import { readFileSync } from 'node:fs';
import Fastify from 'fastify';

const port = Number(process.env.BENCH_BARE_PORT);
const bodyFile = process.env.BENCH_BARE_BODY_FILE;
if (!Number.isInteger(port) || port <= 0 || !bodyFile) {
  console.error('bare-http.server: set BENCH_BARE_PORT and BENCH_BARE_BODY_FILE');
  process.exit(2);
}
const body = JSON.parse(readFileSync(bodyFile, 'utf8')) as unknown;
const route = process.env.BENCH_BARE_ROUTE?.trim() || '/mailboxes';

const method = process.env.BENCH_BARE_METHOD === 'POST' ? 'POST' : 'GET';
const status = Number(process.env.BENCH_BARE_STATUS ?? 200) || 200;

const app = Fastify({ logger: false });
// Serialized on every request, as the service's handler result is.
app.route({ method, url: route, handler: async (_request, reply) => reply.code(status).send(body) });
app.get('/health', async () => ({ ok: true }));

await app.listen({ host: '127.0.0.1', port });

let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  app.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);

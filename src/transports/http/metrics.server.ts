import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ReadyReport } from '../../lib/health.js';
import type { Logger } from '../../lib/logger.js';
import type { Metrics } from '../../lib/metrics.js';

/**
 * The metrics listener (MAILROOM_METRICS_HOST:MAILROOM_METRICS_PORT), which every role of a process shares:
 * GET /metrics in the Prometheus text format, and GET /health/live and /health/ready, so that a process without
 * the api role (smtp, worker) can be probed too. A plain node:http server: it answers a scraper and a probe, and
 * nothing else (every other path is a 404).
 */
export interface MetricsServer {
  listen(host: string, port: number): Promise<number>;
  close(): Promise<void>;
}

export interface MetricsServerDeps {
  metrics: Pick<Metrics, 'scrape'>;
  ready: () => Promise<ReadyReport>;
  logger: Logger;
}

/** A scraper or probe that sends nothing for this long is cut off. */
const REQUEST_TIMEOUT_MS = 10_000;
const HEADERS_TIMEOUT_MS = 5000;

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

async function answer(deps: MetricsServerDeps, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = (req.url ?? '/').split('?')[0];
  if (path !== '/metrics' && path !== '/health/live' && path !== '/health/ready') {
    return json(res, 404, { error: 'not_found', detail: 'this listener serves GET /metrics, /health/live and /health/ready' });
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') return json(res, 405, { error: 'method_not_allowed', detail: `${path} answers GET` }, { allow: 'GET, HEAD' });
  if (path === '/health/live') return json(res, 200, { ok: true });
  if (path === '/health/ready') {
    const report = await deps.ready();
    return json(res, report.ok ? 200 : 503, report);
  }
  const scrape = await deps.metrics.scrape();
  res.writeHead(200, { 'content-type': scrape.contentType, 'cache-control': 'no-store', 'content-length': Buffer.byteLength(scrape.body) });
  res.end(req.method === 'HEAD' ? undefined : scrape.body);
}

export function createMetricsServer(deps: MetricsServerDeps): MetricsServer {
  const server = createServer({ requestTimeout: REQUEST_TIMEOUT_MS, headersTimeout: HEADERS_TIMEOUT_MS }, (req, res) => {
    answer(deps, req, res).catch((err: unknown) => {
      deps.logger.error({ err, url: req.url }, 'metrics listener failed to answer');
      if (!res.headersSent) json(res, 500, { error: 'internal_error', detail: 'the answer could not be made' });
      else res.destroy();
    });
  });
  return {
    listen(host, port) {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          resolve((server.address() as AddressInfo).port);
        });
      });
    },
    close() {
      return new Promise((resolve) => {
        if (!server.listening) return resolve();
        server.close(() => resolve());
        // A scraper's keep-alive connection must not hold the process open.
        server.closeAllConnections();
      });
    },
  };
}

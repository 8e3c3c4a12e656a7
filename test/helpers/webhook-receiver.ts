import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request a receiver got. */
export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The raw body bytes as text. */
  body: string;
  /** Date.now() when the body had arrived. */
  at: number;
}

/** What the receiver answers; `delayMs` holds the answer back (a slow endpoint), `hang` never answers. */
export interface ReceiverAnswer {
  status: number;
  headers?: Record<string, string>;
  body?: string | Buffer;
  delayMs?: number;
  hang?: boolean;
}

/** A real HTTP receiver on loopback (node:http) whose answers the test decides per request. */
export interface WebhookReceiver {
  url: string;
  port: number;
  host: string;
  received: ReceivedRequest[];
  /** Decides each answer; 204 by default. */
  answer: (request: ReceivedRequest, index: number) => ReceiverAnswer;
  /** Resolve once `count` requests have arrived (with an optional filter); reject after `timeoutMs`. */
  waitFor(count: number, timeoutMs?: number, filter?: (r: ReceivedRequest) => boolean): Promise<ReceivedRequest[]>;
  close(): Promise<void>;
}

export async function startReceiver(options: { host?: string; port?: number } = {}): Promise<WebhookReceiver> {
  const host = options.host ?? '127.0.0.1';
  const received: ReceivedRequest[] = [];
  const waiters = new Set<() => void>();
  const receiver: WebhookReceiver = {
    url: '',
    port: 0,
    host,
    received,
    answer: () => ({ status: 204 }),
    waitFor(count, timeoutMs = 10_000, filter = () => true) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const matching = received.filter(filter);
          if (matching.length >= count) {
            clearTimeout(timer);
            waiters.delete(check);
            resolve(matching);
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`receiver ${receiver.url}: ${received.filter(filter).length} of ${count} requests within ${timeoutMs} ms`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const request: ReceivedRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
      const index = received.length;
      received.push(request);
      for (const waiter of [...waiters]) waiter();
      const answer = receiver.answer(request, index);
      if (answer.hang) return;
      const send = () => {
        res.writeHead(answer.status, answer.headers ?? {});
        res.end(answer.body ?? '');
      };
      if (answer.delayMs) setTimeout(send, answer.delayMs);
      else send();
    });
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, host, resolve));
  const port = (server.address() as AddressInfo).port;
  receiver.port = port;
  receiver.url = `http://${host}:${port}`;
  return receiver;
}

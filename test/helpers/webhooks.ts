import type { LightMyRequestResponse } from 'fastify';
import { pino } from 'pino';
import { createWorker, type Worker } from '../../src/jobs/worker.js';
import type { Logger } from '../../src/lib/logger.js';
import type { Harness } from './harness.js';
import { session } from './harness.js';

export interface WebhookBody {
  webhook_id: string;
  url: string;
  event_types: string[];
  active: boolean;
  has_secret: boolean;
  created_at: string;
  updated_at: string;
  secret?: string;
}

export interface DeliveryBody {
  delivery_id: string;
  event_id: string;
  event_type: string;
  attempt: number;
  status_code: number | null;
  error: string | null;
  success: boolean;
  duration_ms: number;
  delivered_at: string;
}

/** A fixed, valid Standard Webhooks secret (24 bytes). */
export const SECRET_A = `whsec_${Buffer.alloc(24, 1).toString('base64')}`;
export const SECRET_B = `whsec_${Buffer.alloc(32, 2).toString('base64')}`;

/** The session-surface webhook routes, for one session token. */
export function webhookApi(h: Harness, token: string) {
  const headers = session(token);
  return {
    create: (payload: Record<string, unknown>) => h.app.inject({ method: 'POST', url: '/app/api/webhooks', headers, payload }),
    list: () => h.app.inject({ method: 'GET', url: '/app/api/webhooks', headers }),
    get: (id: string) => h.app.inject({ method: 'GET', url: `/app/api/webhooks/${id}`, headers }),
    patch: (id: string, payload: Record<string, unknown>) => h.app.inject({ method: 'PATCH', url: `/app/api/webhooks/${id}`, headers, payload }),
    remove: (id: string) => h.app.inject({ method: 'DELETE', url: `/app/api/webhooks/${id}`, headers }),
    deliveries: (id: string, query = '') => h.app.inject({ method: 'GET', url: `/app/api/webhooks/${id}/deliveries${query}`, headers }),
    test: (id: string, payload: Record<string, unknown>) => h.app.inject({ method: 'POST', url: `/app/api/webhooks/${id}/test`, headers, payload }),
    /** Create and return the endpoint; throws unless 201. */
    async add(payload: Record<string, unknown>): Promise<WebhookBody> {
      const res = await this.create(payload);
      if (res.statusCode !== 201) throw new Error(`create webhook: ${res.statusCode} ${res.body}`);
      return res.json<WebhookBody>();
    },
    async history(id: string): Promise<DeliveryBody[]> {
      const res: LightMyRequestResponse = await this.deliveries(id, '?limit=500');
      if (res.statusCode !== 200) throw new Error(`deliveries: ${res.statusCode} ${res.body}`);
      return res.json<{ deliveries: DeliveryBody[] }>().deliveries;
    },
  };
}

/** A logger that keeps what is logged at warn and above (`msg` and level), for tests that expect no errors. */
export function capturingLogger(): { logger: Logger; lines: Array<{ level: number; msg: string }> } {
  const lines: Array<{ level: number; msg: string }> = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line) as { level: number; msg: string }) });
  return { logger, lines };
}

/** The service's worker (every handler), woken by the service's own after-commit notifications as `serve` wires it. */
export function startWorker(h: Harness, pollMs = 50, logger: Logger = pino({ level: 'silent' })): Worker & { close(): Promise<void> } {
  const worker = createWorker(h.services.handlers, { queue: h.services.queue, logger, leaseMs: h.config.leaseMs, pollMs });
  const unsubscribe = h.services.wakeups.subscribe((name) => worker.wake(name));
  worker.start();
  return Object.assign(worker, {
    async close() {
      unsubscribe();
      await worker.stop(2000);
    },
  });
}

/** Poll until `check` gives a value, for at most `timeoutMs`; the error says what was awaited. */
export async function eventually<T>(what: string, check: () => Promise<T | undefined> | T | undefined, timeoutMs = 10_000, intervalMs = 20): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

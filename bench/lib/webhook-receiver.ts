import { join } from 'node:path';
import { apiRequest, ROOT } from './mailroom.js';
import { freeLoopbackPort, waitForOutput, type ManagedProcess } from './processes.js';
import type { Scope } from './scope.js';
import { profileFlags, type SuiteContext } from './suite.js';

const RECEIVER = join(ROOT, 'bench', 'servers', 'webhook-receiver.server.ts');

/** The bench's webhook receiver (servers/webhook-receiver.server.ts), its own process: 204 to every POST, at once. */
export interface Receiver {
  /** One URL per endpoint port. */
  urls: string[];
  process: ManagedProcess;
  stats(withLatencies?: boolean): Promise<{ count: number; first: number; last: number; latencies?: number[] }>;
  reset(): Promise<void>;
}

/** Start the receiver on `ports` free loopback ports; stopped when `scope` closes. */
export async function startReceiver(context: SuiteContext, scope: Scope, ports: number): Promise<Receiver> {
  const list = await Promise.all(Array.from({ length: ports }, () => freeLoopbackPort()));
  const proc = context.processes.start('webhook receiver', {
    args: [...profileFlags(context.settings, 'webhook-receiver'), '--import', 'tsx', RECEIVER],
    cwd: ROOT,
    env: { ...process.env, BENCH_RECEIVER_PORTS: list.join(',') },
  });
  scope.defer(proc.name, () => proc.stop());
  await waitForOutput(proc, /^listening /m, 30_000, context.signal);
  const base = `http://127.0.0.1:${list[0]}`;
  return {
    urls: list.map((port) => `http://127.0.0.1:${port}`),
    process: proc,
    async stats(withLatencies = false) {
      const res = await apiRequest(`${base}/stats${withLatencies ? '?latencies=1' : ''}`, {}, context.signal);
      return JSON.parse(res.text) as { count: number; first: number; last: number; latencies?: number[] };
    },
    async reset() {
      await apiRequest(`${base}/reset`, { method: 'POST' }, context.signal);
    },
  };
}

import { createFairGate } from '../../lib/fair-gate.js';
import type { Logger } from '../../lib/logger.js';
import { asBuffer, createThreadPool } from '../../lib/thread-pool.js';
import type { SigningKey } from '../domains/domain.service.js';
import { signMessage } from './dkim-sign.js';

/** Puts a DKIM-Signature in front of outbound messages. */
export interface MessageSigner {
  /** `workspaceId` is whose message it is: the threads are shared fairly between workspaces. */
  sign(raw: Buffer, key: SigningKey, workspaceId: string): Promise<Buffer>;
  /** Stop any threads; further messages are signed in the calling thread. */
  close(): Promise<void>;
}

/** One message to sign (its bytes are copied to the thread). */
export interface SigningTask {
  raw: Uint8Array;
  key: SigningKey;
}

/** An RSA signature is pure CPU; two per thread keep a thread busy while the other's bytes travel. */
const TASKS_PER_THREAD = 2;

/** Signing in the calling thread (MAILROOM_DKIM_THREADS=0, and tests that want no threads). */
export function createInProcessSigner(): MessageSigner {
  return { sign: (raw, key) => signMessage(raw, key), close: () => Promise.resolve() };
}

/**
 * Signing on worker threads (lib/thread-pool.ts): an RSA-2048 signature and the body hash are most of
 * a delivery's CPU, which the thread running the delivery worker (and, in one process, the API) should
 * not spend. A message the pool cannot sign is signed in the calling thread.
 *
 * The threads are shared between workspaces through a fair gate in front of the pool: it lets through only
 * as many signings as the threads hold at once, at most `perWorkspace` of one workspace (default: one per
 * thread, half the slots), and the waiting ones round-robin across workspaces. Without it the pool signs
 * in arrival order, so a workspace sending a batch of thousands holds every other workspace's mail behind it.
 */
export function createThreadedSigner(options: { threads: number; perWorkspace?: number | null; logger: Logger }): MessageSigner {
  const pool = createThreadPool<SigningTask, Buffer>({
    near: import.meta.url,
    worker: 'dkim-sign.worker',
    threads: options.threads,
    tasksPerThread: TASKS_PER_THREAD,
    what: 'DKIM signing',
    logger: options.logger,
    inProcess: (task) => signMessage(asBuffer(task.raw), task.key),
    revive: asBuffer,
  });
  const gate = createFairGate({ total: options.threads * TASKS_PER_THREAD, perKey: options.perWorkspace ?? options.threads });
  return {
    async sign(raw, key, workspaceId) {
      const release = await gate.acquire(workspaceId);
      try {
        return await pool.run({ raw, key });
      } finally {
        release();
      }
    },
    close: () => pool.close(),
  };
}

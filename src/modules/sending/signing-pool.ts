import type { Logger } from '../../lib/logger.js';
import { asBuffer, createThreadPool } from '../../lib/thread-pool.js';
import type { SigningKey } from '../domains/domain.service.js';
import { signMessage } from './dkim-sign.js';

/** Puts a DKIM-Signature in front of outbound messages. */
export interface MessageSigner {
  sign(raw: Buffer, key: SigningKey): Promise<Buffer>;
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
  return { sign: signMessage, close: () => Promise.resolve() };
}

/**
 * Signing on worker threads (lib/thread-pool.ts): an RSA-2048 signature and the body hash are most of
 * a delivery's CPU, which the thread running the delivery worker (and, in one process, the API) should
 * not spend. A message the pool cannot sign is signed in the calling thread.
 */
export function createThreadedSigner(options: { threads: number; logger: Logger }): MessageSigner {
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
  return {
    sign: (raw, key) => pool.run({ raw, key }),
    close: () => pool.close(),
  };
}

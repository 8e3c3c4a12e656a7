/**
 * Entry of a DKIM signing thread (see signing-pool.ts): signs one message per task. Runs in a worker
 * thread only; each thread keeps its own parsed keys (dkim-sign.ts).
 */
import { asBuffer } from '../../lib/thread-pool.js';
import { signMessage } from './dkim-sign.js';
import type { SigningTask } from './signing-pool.js';

export default function sign(task: SigningTask): Promise<Buffer> {
  return signMessage(asBuffer(task.raw), task.key);
}

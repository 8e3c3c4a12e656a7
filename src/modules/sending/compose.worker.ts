/**
 * Entry of a composing thread (see compose-pool.ts): builds one outbound message per task. Runs in a worker
 * thread only.
 */
import { revivedInput } from './compose-pool.js';
import { composeMessage, type ComposeInput } from './compose.js';

export default async function compose(input: ComposeInput): Promise<Uint8Array> {
  const raw = await composeMessage(revivedInput(input));
  // In shared memory, so that the thread that asked receives it without a copy.
  const shared = new Uint8Array(new SharedArrayBuffer(raw.length));
  shared.set(raw);
  return shared;
}

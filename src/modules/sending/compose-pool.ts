import type { Logger } from '../../lib/logger.js';
import { asBuffer, createThreadPool } from '../../lib/thread-pool.js';
import { composeMessage, type ComposeInput } from './compose.js';

/** Builds outbound messages (compose.ts), large ones off the calling thread. */
export type Composer = (input: ComposeInput) => Promise<Buffer>;

/**
 * Attachments and bodies above this compose on a thread; smaller messages where they are sent, as a thread hop
 * costs more than composing them.
 */
export const THREADED_COMPOSE_BYTES = 256 * 1024;

const sizeOf = (input: ComposeInput) => input.text.length + (input.html?.length ?? 0) + (input.attachments ?? []).reduce((sum, a) => sum + a.content.length, 0);

/** What came through structured clone (plain Uint8Arrays) as the composer takes it. */
export function revivedInput(input: ComposeInput): ComposeInput {
  return input.attachments ? { ...input, attachments: input.attachments.map((a) => ({ ...a, content: asBuffer(a.content) })) } : input;
}

/**
 * Composing on worker threads (lib/thread-pool.ts): base64 and line folding of 25 MiB of attachments hold a
 * thread for tens of milliseconds, which the thread answering every workspace's requests should not spend.
 * The message comes back in shared memory (compose.worker.ts), so receiving it copies nothing. `threads` 0:
 * everything composes in the calling thread.
 */
export function createComposer(options: { threads: number; logger: Logger }): { compose: Composer; close(): Promise<void> } {
  if (options.threads === 0) return { compose: composeMessage, close: () => Promise.resolve() };
  const pool = createThreadPool<ComposeInput, Uint8Array>({
    near: import.meta.url,
    worker: 'compose.worker',
    threads: options.threads,
    tasksPerThread: 1,
    what: 'composing',
    logger: options.logger,
    inProcess: (input) => composeMessage(revivedInput(input)),
  });
  return {
    compose: async (input) => (sizeOf(input) <= THREADED_COMPOSE_BYTES ? composeMessage(input) : asBuffer(await pool.run(input))),
    close: () => pool.close(),
  };
}

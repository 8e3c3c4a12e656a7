import type { Work } from '../../db/tables.js';
import type { EnqueueInput } from '../../jobs/queue.js';
import type { JobHandler } from '../../jobs/worker.js';
import type { Logger } from '../../lib/logger.js';
import type { Metrics } from '../../lib/metrics.js';
import { RspamdError, type SpamScanner } from '../../lib/rspamd.js';
import type { MailStore } from '../mail/mail.store.js';
import type { Folder } from './message.types.js';

/**
 * Teaching rspamd from the user's moves: an inbound message moved into `spam` is learnt as spam, one moved out of it
 * (except into `trash`) as ham. The lesson is a job of the queue, written in the move's transaction, so the request
 * never waits for rspamd and a lesson survives rspamd being down.
 */
export const SPAM_LEARN_QUEUE = 'spam-learn';
/** Lessons are worth a few tries, not days of them: a lost one costs a little accuracy. */
const LEARN_MAX_ATTEMPTS = 8;

export interface SpamLearnPayload {
  messageId: string;
  kind: 'spam' | 'ham';
}

/** What a move teaches, if anything: into spam is spam; out of spam is ham, unless it goes to the trash. */
export function lessonOf(direction: 'inbound' | 'outbound', from: string, to: Folder): 'spam' | 'ham' | null {
  if (direction !== 'inbound' || from === to) return null;
  if (to === 'spam') return 'spam';
  return from === 'spam' && to !== 'trash' ? 'ham' : null;
}

export interface SpamLearning {
  /** Queue a lesson in the caller's transaction. */
  teach(trx: Work, workspaceId: string, payload: SpamLearnPayload): Promise<void>;
}

export function createSpamLearning(queue: { enqueue(trx: Work, input: EnqueueInput): Promise<string> }): SpamLearning {
  return {
    async teach(trx, workspaceId, payload) {
      await queue.enqueue(trx, { queue: SPAM_LEARN_QUEUE, workspaceId, payload, maxAttempts: LEARN_MAX_ATTEMPTS });
    },
  };
}

/** The worker's side: reads the message's source and posts it to rspamd's controller. */
export function createSpamLearnHandler(deps: { work: Work; store: Pick<MailStore, 'findContent'>; scanner: SpamScanner; logger: Logger; metrics: Pick<Metrics, 'rspamdError'> }): JobHandler<SpamLearnPayload> {
  const { work, store, scanner, logger, metrics } = deps;
  return {
    queue: SPAM_LEARN_QUEUE,
    concurrency: 2,
    workspaceConcurrency: 1,
    backoff: { baseMs: 30_000, factor: 2, capMs: 30 * 60_000, jitter: 0.2 },
    async handle(job) {
      const { messageId, kind } = job.payload;
      if (job.workspaceId === null) return { type: 'dead', error: 'a lesson without a workspace' };
      const content = await store.findContent(work, job.workspaceId, messageId, true);
      // Deleted since: nothing left to learn from.
      if (!content?.raw) return { type: 'done' };
      try {
        await scanner.learn(kind, Buffer.from(content.raw));
      } catch (err) {
        if (!(err instanceof RspamdError)) throw err;
        metrics.rspamdError('learn');
        logger.warn({ err: err.message, messageId, kind }, 'rspamd learn failed');
        return { type: 'retry', error: err.message };
      }
      return { type: 'done' };
    },
  };
}

import { asBuffer, createThreadPool } from '../../lib/thread-pool.js';
import type { Logger } from '../../lib/logger.js';
import { analyzeMessage, headerPairs, type Analysis, type MessageAnalyzer } from './analysis.js';
import { AUTH_TIME_LIMIT_MS, cutShortOutcome, type AuthContext, type MessageAuthenticator } from './authentication.js';
import { parseHeadersOnly } from './mime.js';

/** What each analysis thread is started with. */
export interface AnalysisWorkerData {
  dnsServers: readonly string[];
  hostname: string;
}

/** One message to analyze (the bytes are copied to the thread; the caller keeps its buffer). */
export interface AnalysisTask {
  raw: Uint8Array;
  context: AuthContext;
}

/** Messages one thread works on at once: parsing is CPU, but SPF/DKIM/DMARC wait on DNS. */
const TASKS_PER_THREAD = 8;
/**
 * The whole analysis of one message, on its thread: the checks' own limit (AUTH_TIME_LIMIT_MS) plus time for
 * parsing, which the parse bounds in mime.ts keep far below this. Past it the message is stored with its
 * headers salvaged and `temperror` results, and its thread, whose other messages were held up, is replaced.
 */
export const ANALYSIS_TIME_LIMIT_MS = AUTH_TIME_LIMIT_MS + 5_000;

/** Structured clone turns Buffers into plain Uint8Arrays; the store wants Buffers back. */
function revive(analysis: Analysis): Analysis {
  for (const attachment of analysis.parsed.attachments) attachment.content = asBuffer(attachment.content);
  return analysis;
}

/** What is stored of a message whose analysis passed its time limit: the headers, the rest as text, `temperror`. */
function timedOut(raw: Uint8Array, hostname: string): Analysis {
  const why = `analysis not finished within ${ANALYSIS_TIME_LIMIT_MS} ms`;
  const auth = cutShortOutcome('temperror', hostname, why);
  const parsed = parseHeadersOnly(asBuffer(raw), why);
  parsed.headers.unshift(...headerPairs(auth.headerLines));
  return { parsed, auth };
}

/**
 * MIME parsing and SPF/DKIM/DMARC on a pool of worker threads (lib/thread-pool.ts), so that the thread
 * speaking SMTP and writing the database spends no time on them, and a hard message cannot stall it.
 * A message the pool cannot analyze is analyzed in the calling thread, so mail is never refused for it.
 */
export function createThreadedAnalyzer(options: { threads: number; dnsServers: readonly string[]; hostname: string; fallback: MessageAuthenticator; logger: Logger }): MessageAnalyzer {
  const workerData: AnalysisWorkerData = { dnsServers: [...options.dnsServers], hostname: options.hostname };
  const pool = createThreadPool<AnalysisTask, Analysis>({
    near: import.meta.url,
    worker: 'analysis.worker',
    threads: options.threads,
    tasksPerThread: TASKS_PER_THREAD,
    workerData,
    what: 'analysis',
    logger: options.logger,
    inProcess: (task) => analyzeMessage(asBuffer(task.raw), task.context, options.fallback),
    revive,
    timeLimit: { ms: ANALYSIS_TIME_LIMIT_MS, onTimeout: (task) => timedOut(task.raw, options.hostname) },
  });
  return {
    analyze: (raw, context) => pool.run({ raw, context }),
    close: () => pool.close(),
    threadStats: () => pool.stats(),
  };
}

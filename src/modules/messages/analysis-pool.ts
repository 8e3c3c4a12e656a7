import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import type { Logger } from '../../lib/logger.js';
import { analyzeMessage, type Analysis, type MessageAnalyzer } from './analysis.js';
import type { AuthContext, MessageAuthenticator } from './authentication.js';

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

/** The worker entry next to this module: .js when built, .ts when run from source (tests, tsx), which then needs tsx's loader. */
function workerEntry(): { filename: string; execArgv?: string[] } {
  const here = fileURLToPath(import.meta.url);
  const fromSource = here.endsWith('.ts');
  const filename = here.replace(/analysis-pool\.(ts|js)$/, `analysis.worker.${fromSource ? 'ts' : 'js'}`);
  // Built: the threads inherit the process's flags (e.g. --cpu-prof).
  return fromSource ? { filename, execArgv: [...process.execArgv, '--import', 'tsx'] } : { filename };
}

/** Structured clone turns Buffers into plain Uint8Arrays; the store wants Buffers back. */
function revive(analysis: Analysis): Analysis {
  for (const attachment of analysis.parsed.attachments) {
    const content = attachment.content as Uint8Array;
    if (!Buffer.isBuffer(content)) attachment.content = Buffer.from(content.buffer, content.byteOffset, content.byteLength);
  }
  return analysis;
}

/**
 * MIME parsing and SPF/DKIM/DMARC on a pool of worker threads (piscina), so that the thread speaking
 * SMTP and writing the database spends no time on them, and a hard message cannot stall it. Threads
 * start with the first message. A task the pool cannot run (a thread that died) is analyzed in the
 * calling thread instead, so mail is never refused for it.
 */
export function createThreadedAnalyzer(options: { threads: number; dnsServers: readonly string[]; hostname: string; fallback: MessageAuthenticator; logger: Logger }): MessageAnalyzer {
  let pool: Piscina<AnalysisTask, Analysis> | null = null;
  let closed = false;

  function start(): Piscina<AnalysisTask, Analysis> {
    const entry = workerEntry();
    const workerData: AnalysisWorkerData = { dnsServers: [...options.dnsServers], hostname: options.hostname };
    const created = new Piscina<AnalysisTask, Analysis>({
      filename: entry.filename,
      ...(entry.execArgv ? { execArgv: entry.execArgv } : {}),
      minThreads: options.threads,
      maxThreads: options.threads,
      concurrentTasksPerWorker: TASKS_PER_THREAD,
      // Tasks await DNS: the threads' event loops must run between and during tasks.
      atomics: 'disabled',
      idleTimeout: Number.POSITIVE_INFINITY,
      workerData,
    });
    created.on('error', (err: unknown) => options.logger.error({ err }, 'analysis thread failed'));
    return created;
  }

  return {
    async analyze(raw, context) {
      if (closed) return analyzeMessage(raw, context, options.fallback);
      pool ??= start();
      try {
        return revive(await pool.run({ raw, context }));
      } catch (err) {
        options.logger.error({ err }, 'analysis thread failed; analyzing in the main thread');
        return analyzeMessage(raw, context, options.fallback);
      }
    },
    async close() {
      closed = true;
      const running = pool;
      pool = null;
      if (running) await running.destroy();
    },
  };
}

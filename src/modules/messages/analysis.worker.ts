/**
 * Entry of a MIME analysis thread (see analysis-pool.ts): parses and authenticates one message per
 * task. Runs in a worker thread only.
 */
import { BufferBlob } from '../../lib/buffer-blob.js';
import { cachingResolver, createDnsResolver } from '../../lib/dns.js';
import { asBuffer, timedTask } from '../../lib/thread-pool.js';
import { analyzeMessage, type Analysis } from './analysis.js';
import { createMailauthAuthenticator } from './authentication.js';
import type { AnalysisTask, AnalysisWorkerData } from './analysis-pool.js';
import { workerData } from 'piscina';

// The parser's only Blob use is its part buffers; this thread runs nothing else (see buffer-blob.ts).
BufferBlob.install();

const settings = workerData as AnalysisWorkerData;
const authenticator = createMailauthAuthenticator({ resolve: cachingResolver(createDnsResolver(settings.dnsServers)), hostname: settings.hostname });

// The pool gives each message a time limit (analysis-pool.ts), which needs to know the thread that started it.
export default timedTask((task: AnalysisTask): Promise<Analysis> => analyzeMessage(asBuffer(task.raw), task.context, authenticator));

import { request } from 'undici';

/**
 * A small client of rspamd's HTTP protocol: `POST /checkv2` on its normal worker scores a message, and
 * `POST /learnspam` / `/learnham` on its controller teach its classifier. Errors (down, slow, an answer that is not
 * rspamd's) are thrown as `RspamdError`, so the caller decides what an unavailable scanner means.
 */

/** The longest a check or a learn may take, connection, upload and answer together. */
export const RSPAMD_TIMEOUT_MS = 5000;
/** Symbols kept of a verdict: the highest scores first. */
export const RSPAMD_TOP_SYMBOLS = 10;
/** Bytes of an answer read at most: a verdict with every symbol is a few KiB. */
const MAX_ANSWER_BYTES = 1024 * 1024;

export const SPAM_ACTIONS = ['reject', 'soft reject', 'greylist', 'add header', 'rewrite subject', 'no action'] as const;
export type SpamAction = (typeof SPAM_ACTIONS)[number];

export interface SpamSymbol {
  name: string;
  score: number;
}

export interface SpamVerdict {
  score: number;
  action: SpamAction;
  /** At most RSPAMD_TOP_SYMBOLS, highest score first (ties by name). */
  symbols: SpamSymbol[];
}

/** What the SMTP transaction knew about a message: rspamd's protocol headers. */
export interface ScanFacts {
  ip: string;
  helo: string;
  /** The envelope sender; empty for the null sender `<>`. */
  from: string;
  rcpt: readonly string[];
  /** Our own host name, as in our greeting. */
  hostname: string;
}

export interface SpamScanner {
  /** Scores one message; throws RspamdError when rspamd cannot answer in time. */
  check(raw: Buffer, facts: ScanFacts): Promise<SpamVerdict>;
  /** Teaches the classifier a message is spam or ham; throws RspamdError when rspamd refuses or is unreachable. */
  learn(kind: 'spam' | 'ham', raw: Buffer): Promise<void>;
}

export class RspamdError extends Error {
  override readonly name = 'RspamdError';
}

export interface RspamdOptions {
  /** The normal worker, e.g. http://127.0.0.1:11333. */
  url: string;
  /** The controller (config derives it from `url` with port 11334 when not given). */
  controllerUrl: string;
  password?: string | null | undefined;
  timeoutMs?: number | undefined;
}

/** The verdict in an answer of `/checkv2`, or an error when it is not one. */
export function parseVerdict(answer: unknown): SpamVerdict {
  if (typeof answer !== 'object' || answer === null) throw new RspamdError('rspamd answered no JSON object');
  const { score, action, symbols } = answer as { score?: unknown; action?: unknown; symbols?: unknown };
  const known = SPAM_ACTIONS.find((a) => a === action);
  if (typeof score !== 'number' || !Number.isFinite(score) || !known) throw new RspamdError('rspamd answered no score and action');
  const all: SpamSymbol[] = [];
  if (typeof symbols === 'object' && symbols !== null) {
    for (const [name, value] of Object.entries(symbols as Record<string, unknown>)) {
      const symbolScore = (value as { score?: unknown } | null)?.score;
      all.push({ name, score: typeof symbolScore === 'number' && Number.isFinite(symbolScore) ? symbolScore : 0 });
    }
  }
  all.sort((a, b) => b.score - a.score || a.name.localeCompare(b.name));
  return { score: Math.round(score * 100) / 100, action: known, symbols: all.slice(0, RSPAMD_TOP_SYMBOLS) };
}

/** POSTs `raw` and returns the JSON answer of a status in `ok`; every failure is an RspamdError. */
async function post(url: string, raw: Buffer, headers: string[], timeoutMs: number, ok: readonly number[] = [200]): Promise<unknown> {
  try {
    const answer = await request(url, { method: 'POST', body: raw, headers, signal: AbortSignal.timeout(timeoutMs) });
    let size = 0;
    const chunks: Buffer[] = [];
    for await (const chunk of answer.body as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > MAX_ANSWER_BYTES) throw new RspamdError('rspamd answered too much');
      chunks.push(chunk);
    }
    const text = Buffer.concat(chunks).toString('utf8');
    if (!ok.includes(answer.statusCode)) throw new RspamdError(`rspamd answered ${answer.statusCode}: ${text.slice(0, 200)}`);
    return JSON.parse(text) as unknown;
  } catch (err) {
    if (err instanceof RspamdError) throw err;
    const why = err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError') ? `no answer within ${timeoutMs} ms` : (err as Error).message;
    throw new RspamdError(`rspamd unavailable: ${why}`, { cause: err });
  }
}

/** A scanner over rspamd's normal worker and controller. */
export function createRspamdScanner(options: RspamdOptions): SpamScanner {
  const base = options.url.replace(/\/$/, '');
  const controller = options.controllerUrl.replace(/\/$/, '');
  const timeoutMs = options.timeoutMs ?? RSPAMD_TIMEOUT_MS;
  return {
    async check(raw, facts) {
      // A flat list of pairs: one `Rcpt` header per recipient, as rspamd's protocol has them.
      const headers = ['IP', facts.ip, 'Helo', facts.helo, 'Hostname', facts.hostname, 'From', facts.from || '<>'];
      for (const rcpt of facts.rcpt) headers.push('Rcpt', rcpt);
      return parseVerdict(await post(`${base}/checkv2`, raw, headers, timeoutMs));
    },
    async learn(kind, raw) {
      const headers = options.password ? ['Password', options.password] : [];
      // 208: learnt before (as this kind); nothing left to teach.
      await post(`${controller}/learn${kind}`, raw, headers, timeoutMs, [200, 208]);
    },
  };
}

import type { AuthContext, AuthOutcome, MessageAuthenticator } from './authentication.js';
import { parseMessage, type ParsedMessage } from './mime.js';

/** What inbound storage needs to know about a raw message before it stores it. */
export interface Analysis {
  /** The parsed message; its headers start with the Authentication-Results lines of `auth`. */
  parsed: ParsedMessage;
  auth: AuthOutcome;
}

/** Parses and authenticates incoming mail (pure work on the bytes: no database). */
export interface MessageAnalyzer {
  analyze(raw: Buffer, context: AuthContext): Promise<Analysis>;
  /** Stop any threads; further calls analyze in the calling thread. */
  close(): Promise<void>;
  /** Threaded: tasks waiting for a thread, and threads replaced since start (metrics). */
  threadStats?(): { queued: number; restarts: number };
}

/** Header lines as `{name, value}` pairs, unfolded (RFC 5322 section 2.2.3). */
export function headerPairs(lines: string): Array<{ name: string; value: string }> {
  return lines
    .split(/\r?\n(?![ \t])/)
    .filter((line) => line.includes(':'))
    .map((line) => ({ name: line.slice(0, line.indexOf(':')), value: line.slice(line.indexOf(':') + 1).replace(/\r?\n[ \t]+/g, ' ').trim() }));
}

/** Parse (MIME) and authenticate (SPF, DKIM, DMARC) one message: the same work in whichever thread runs it. */
export async function analyzeMessage(raw: Buffer, context: AuthContext, authenticator: MessageAuthenticator): Promise<Analysis> {
  const [auth, parsed] = await Promise.all([authenticator.check(raw, context), parseMessage(raw)]);
  // Authentication-Results goes in front of the header list, as in the stored source (RFC 8601).
  if (auth.headerLines) parsed.headers.unshift(...headerPairs(auth.headerLines));
  return { parsed, auth };
}

/** Analysis in the calling thread (tests that bring their own authenticator, and the fallback of the pool). */
export function createInProcessAnalyzer(authenticator: MessageAuthenticator): MessageAnalyzer {
  return {
    analyze: (raw, context) => analyzeMessage(raw, context, authenticator),
    close: () => Promise.resolve(),
  };
}

import { Agent, fetch } from 'undici';

/** A Server-Sent Events client for tests: every message and comment as it arrives. */
export interface SseMessage {
  id?: string;
  event?: string;
  data?: string;
  comment?: string;
}

export interface SseClient {
  status: number;
  messages: SseMessage[];
  /** Resolve once `count` messages (not comments) have arrived, or reject after `timeoutMs`. */
  waitFor(predicate: (messages: SseMessage[]) => boolean, timeoutMs?: number): Promise<SseMessage[]>;
  /** Resolves when the server ends the stream (or it is closed here). */
  ended: Promise<void>;
  /** Everything received as text (a refusal's JSON body, once `ended`). */
  readonly text: string;
  close(): void;
}

export async function openStream(url: string, headers: Record<string, string>): Promise<SseClient> {
  const abort = new AbortController();
  // A connection of its own, destroyed on close: nothing of the stream outlives the test.
  const agent = new Agent();
  const res = await fetch(url, { headers, signal: abort.signal, dispatcher: agent });
  const messages: SseMessage[] = [];
  const waiters = new Set<() => void>();
  let ended = false;
  let text = '';
  const finished = (async () => {
    if (!res.body) return;
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of res.body) {
        const piece = decoder.decode(chunk as Uint8Array, { stream: true });
        text += piece;
        buffer += piece;
        let cut: number;
        while ((cut = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          const message: SseMessage = {};
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) message.comment = line.slice(1).trim();
            else {
              const colon = line.indexOf(':');
              const field = line.slice(0, colon);
              const value = line.slice(colon + 1).replace(/^ /, '');
              if (field === 'id' || field === 'event' || field === 'data') message[field] = value;
            }
          }
          messages.push(message);
          for (const w of [...waiters]) w();
        }
      }
    } catch {
      // aborted
    }
    ended = true;
    for (const w of [...waiters]) w();
  })();
  return {
    status: res.status,
    messages,
    ended: finished,
    get text() {
      return text;
    },
    waitFor(predicate, timeoutMs = 5000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (predicate(messages)) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve(messages);
          } else if (ended) {
            waiters.delete(check);
            clearTimeout(timer);
            reject(new Error(`stream ended; got ${JSON.stringify(messages)}`));
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`timed out; got ${JSON.stringify(messages)}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    close() {
      abort.abort();
      void agent.destroy().catch(() => undefined);
    },
  };
}

export const eventsOf = (messages: SseMessage[]): SseMessage[] => messages.filter((m) => m.id !== undefined);

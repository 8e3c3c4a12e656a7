import { sessionEnded, sessionHeaders } from './api';
import type { paths } from '../../src/sdk/openapi';

/** One Server-Sent Event of GET /app/api/events/stream. */
export interface StreamEvent {
  id: string;
  type: string;
  data: string;
}

/** Wait before reconnecting after the stream ended or failed; doubled up to the cap. */
const RETRY_FIRST_MS = 500;
const RETRY_MAX_MS = 15_000;

/** Parse one SSE block (the lines between blank lines); comments (`: ping`) give null. */
function parseBlock(block: string): StreamEvent | null {
  let id = '';
  let type = 'message';
  const data: string[] = [];
  for (const line of block.split('\n')) {
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'id') id = value;
    else if (field === 'event') type = value;
    else if (field === 'data') data.push(value);
  }
  return data.length === 0 ? null : { id, type, data: data.join('\n') };
}

/**
 * The stream's route, checked against the API's paths. Read with fetch rather than the client: its answer is read
 * as it comes, its 401 ends the session here and its other refusals are retried.
 */
const STREAM_PATH = '/app/api/events/stream' satisfies keyof paths;

/**
 * Follow the workspace's event stream. EventSource cannot send X-Service-Session, so this reads the stream with
 * fetch; after a drop it reconnects with Last-Event-ID, so the server replays what was missed. Returns a stop function.
 */
export function followEvents(onEvent: (event: StreamEvent) => void, onState: (live: boolean) => void): () => void {
  const controller = new AbortController();
  let lastId: string | null = null;
  let retry = RETRY_FIRST_MS;

  async function readOnce(): Promise<void> {
    const headers: Record<string, string> = { ...sessionHeaders(), accept: 'text/event-stream' };
    if (lastId !== null) headers['last-event-id'] = lastId;
    const res = await fetch(STREAM_PATH, { headers, signal: controller.signal, cache: 'no-store' });
    if (res.status === 401) {
      // The session ended: reconnecting cannot help; the app goes back to its login page.
      controller.abort();
      sessionEnded();
      return;
    }
    if (!res.ok || res.body === null) throw new Error(`event stream answered ${res.status}`);
    onState(true);
    retry = RETRY_FIRST_MS;
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer = (buffer + value).replaceAll('\r\n', '\n');
      let end = buffer.indexOf('\n\n');
      while (end >= 0) {
        const event = parseBlock(buffer.slice(0, end));
        buffer = buffer.slice(end + 2);
        if (event !== null) {
          if (event.id) lastId = event.id;
          onEvent(event);
        }
        end = buffer.indexOf('\n\n');
      }
    }
  }

  async function loop(): Promise<void> {
    while (!controller.signal.aborted) {
      try {
        await readOnce();
      } catch {
        // A drop, a restart or a network error: wait and resume from the last id.
      }
      onState(false);
      if (controller.signal.aborted) return;
      await new Promise((resolve) => setTimeout(resolve, retry));
      retry = Math.min(retry * 2, RETRY_MAX_MS);
    }
  }

  void loop();
  return () => controller.abort();
}

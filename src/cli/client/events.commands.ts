import type { IncomingMessage } from 'node:http';
import type { Command } from 'commander';
import { leaf, run, type Context } from './context.js';
import { ApiError } from './errors.js';

/** One event of the stream: its SSE id and type, and the event JSON (as webhooks deliver it). */
interface StreamedEvent {
  id: string;
  type: string;
  data: string;
}

const RECONNECT_FIRST_MS = 250;
const RECONNECT_MAX_MS = 10_000;
/** Fields of an event's data worth a place on its one line, in this order. */
const SUMMARY_FIELDS = ['mailbox', 'from', 'to', 'subject', 'domain', 'status', 'message_id', 'webhook_id', 'disabled_reason'] as const;

/** Call `onEvent` for each message of an SSE body until it ends (comments and heartbeats are skipped). */
async function readEvents(body: IncomingMessage, onEvent: (event: StreamedEvent) => void): Promise<void> {
  body.setEncoding('utf8');
  let buffer = '';
  for await (const chunk of body) {
    buffer += (chunk as string).replace(/\r\n?/g, '\n');
    let cut: number;
    while ((cut = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const event: StreamedEvent = { id: '', type: 'message', data: '' };
      for (const line of block.split('\n')) {
        const colon = line.indexOf(':');
        if (colon === 0) continue;
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'id') event.id = value;
        else if (field === 'event') event.type = value;
        else if (field === 'data') event.data = event.data ? `${event.data}\n${value}` : value;
      }
      if (event.id && event.data) onEvent(event);
    }
  }
}

/** `12:03:04  message.received  mailbox=desk@… from=alice@… subject="Hi"` */
export function eventLine(event: StreamedEvent, ctx: Context): string {
  let parsed: { created_at?: string; data?: Record<string, unknown> } = {};
  try {
    parsed = JSON.parse(event.data) as typeof parsed;
  } catch {
    // printed without a summary
  }
  const time = parsed.created_at ? new Date(parsed.created_at).toLocaleTimeString('en-GB', { hour12: false }) : '';
  const data = parsed.data ?? {};
  const fields = SUMMARY_FIELDS.flatMap((key) => {
    const value = data[key];
    if (typeof value === 'string') return [`${key}=${/\s/.test(value) ? JSON.stringify(value) : value}`];
    if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return [`${key}=${value.join(',')}`];
    return [];
  });
  return [ctx.style.dim(time), ctx.style.bold(event.type), ...fields].filter((part) => part !== '').join('  ');
}

export function registerEventCommands(program: Command): void {
  leaf(program, {
    name: 'watch',
    description: "print the workspace's events as they happen (Ctrl-C stops)",
    examples: ['mailroom watch', 'mailroom watch --json | jq -r .event_type'],
  }).action(
    run(async (ctx) => {
      const api = ctx.api();
      let last: string | undefined;
      let current: IncomingMessage | undefined;
      let stopping = false;
      let wakeSleep = (): void => undefined;
      process.once('SIGINT', () => {
        stopping = true;
        current?.destroy();
        wakeSleep();
      });
      let delay = RECONNECT_FIRST_MS;
      while (!stopping) {
        try {
          current = await api.stream('/app/api/events/stream', last ? { 'last-event-id': last } : {});
          delay = RECONNECT_FIRST_MS;
          await readEvents(current, (event) => {
            last = event.id;
            process.stdout.write(`${ctx.json ? event.data : eventLine(event, ctx)}\n`);
          });
        } catch (err) {
          // A refusal (no session, no workspace) will not mend by retrying; a lost connection will.
          if (err instanceof ApiError && err.status < 500 && err.status !== 429) throw err;
          if (stopping) break;
          process.stderr.write(`${ctx.style.dim(`connection lost (${err instanceof Error ? err.message : String(err)}); reconnecting`)}\n`);
        }
        if (stopping) break;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, delay);
          wakeSleep = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        delay = Math.min(delay * 2, RECONNECT_MAX_MS);
      }
    }),
  );
}

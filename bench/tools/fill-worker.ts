/**
 * A helper thread of fill-mailbox.ts: generates the fill's mail, composes it with nodemailer and
 * parses it with the service's own parser (from the measured build's dist/), the costly steps of a
 * fill that need no database, so they run beside the thread that stores.
 *
 * Every helper runs the same deterministic generator over all messages (so message n is the same
 * whichever thread makes it) and composes and parses only its share: n % threads === index.
 *
 * workerData: FillWorkerData
 * in:  { upTo }  prepare own messages with seq < upTo (flow control from the storing thread)
 * out: Prepared  one per own message, in seq order
 */
import { parentPort, workerData } from 'node:worker_threads';
import MailComposer from 'nodemailer/lib/mail-composer';
import type * as Mime from '../../src/modules/messages/mime.js';
import type { ParsedMessage } from '../../src/modules/messages/mime.js';
import { mailGenerator, seededRandom, type MailMix } from '../lib/mail-content.js';

/** A mailbox's everyday mail: short text, some HTML, a quarter replies, few small attachments. */
export const FILL_MIX: MailMix = { textBytes: 1500, htmlShare: 0.3, replyShare: 0.25, attachmentShare: 0.02, attachmentBytes: 30 * 1024 };
const FILL_SEED = 4242;

export interface FillWorkerData {
  /** File URL of dist/modules/messages/mime.js. */
  mimeModule: string;
  mailbox: string;
  count: number;
  threads: number;
  index: number;
  /** The first message's time and the span the messages are spread over, epoch ms. */
  startAt: number;
  spanMs: number;
  runId: string;
}

export interface Prepared {
  seq: number;
  /** When the message arrives (the store's clock is set to it). */
  at: number;
  from: string;
  hasAttachment: boolean;
  raw: Uint8Array;
  parsed: ParsedMessage;
}

const data = workerData as FillWorkerData;
const { parseMessage } = (await import(data.mimeModule)) as typeof Mime;
const port = parentPort;
if (!port) throw new Error('fill-worker runs as a worker thread of fill-mailbox.ts');

const next = mailGenerator(data.mailbox, FILL_MIX, FILL_SEED, data.runId);
const jitter = seededRandom(FILL_SEED + 1);
const step = data.spanMs / data.count;
let at = data.startAt;
let seq = 0;
let limit = 0;
let running = false;

async function work(): Promise<void> {
  running = true;
  while (seq < Math.min(limit, data.count)) {
    const mail = next();
    at += Math.max(1, Math.round(step * (0.5 + jitter())));
    const own = seq % data.threads === data.index;
    const current = seq++;
    if (!own) continue;
    mail.options.date = new Date(at - 2000);
    const raw = await new MailComposer(mail.options).compile().build();
    const parsed = await parseMessage(raw);
    const prepared: Prepared = { seq: current, at, from: mail.envelope.from, hasAttachment: mail.hasAttachment, raw, parsed };
    port!.postMessage(prepared);
  }
  running = false;
}

port.on('message', (message: { upTo: number }) => {
  limit = Math.max(limit, message.upTo);
  if (!running) void work();
});

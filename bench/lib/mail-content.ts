/**
 * Realistic, deterministic mail for the load generators: varied senders (all in `.test` domains the
 * bench's DNS server answers NXDOMAIN for), distinct subjects and Message-IDs, plain text with an HTML
 * alternative on part of them, replies that thread onto earlier messages, and binary attachments on
 * a given share. The same seed gives the same mail, so two runs send the same bytes.
 */
import type { SendMailOptions } from 'nodemailer';

/** mulberry32: a tiny seeded PRNG (deterministic mail, not cryptography). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The head of the vocabulary, most frequent first: the words of everyday mail. On their own (a hundred words drawn
 * evenly, as before the search bench) every word was in nearly every message, so a search index had no rare or mid-frequency
 * word to find: real text follows Zipf's law, a few words everywhere and a long tail of words in few messages.
 */
const COMMON_WORDS = (
  'the to and of you we for in this is on your that it be will with please our at have are from by as thanks ' +
  'can if not all or about any new next would could should has had been they so do some more last first but ' +
  'order invoice meeting schedule report team project update review attached regards delivery payment account ' +
  'customer support ticket request question answer week monday friday budget plan release version feature issue ' +
  'change deadline draft final notes call agenda summary quarter numbers sales contract office travel booking ' +
  'confirm details address shipping status pending approved'
).split(' ');

/** Words of the vocabulary: the common ones, then made-up words for the tail (names, products, codes, jargon). */
export const VOCABULARY_SIZE = 200_000;
/** Zipf's exponent: the word of rank r is drawn with a weight of 1 / r^s (about 1 for English text). */
const ZIPF_EXPONENT = 1;
const ONSETS = ['b', 'c', 'd', 'f', 'g', 'h', 'k', 'l', 'm', 'n', 'p', 'r', 's', 't', 'v', 'z', 'br', 'st', 'tr', 'pl', 'gr', 'ch'];
const VOWELS = ['a', 'e', 'i', 'o', 'u', 'ai', 'ou'];
const CODAS = ['', '', '', 'n', 'r', 's', 'l', 'x'];

function makeVocabulary(): string[] {
  const random = seededRandom(0x70cab);
  const pick = (list: readonly string[]) => list[Math.floor(random() * list.length)]!;
  const words = [...COMMON_WORDS];
  const seen = new Set(words);
  while (words.length < VOCABULARY_SIZE) {
    let word = '';
    for (let syllables = 1 + Math.floor(random() * 3); syllables > 0; syllables--) word += pick(ONSETS) + pick(VOWELS);
    word += pick(CODAS);
    if (seen.has(word)) continue;
    seen.add(word);
    words.push(word);
  }
  return words;
}

/** Every word the prose draws from, in rank order (index 0 is the most frequent). Made once, the same everywhere. */
export const VOCABULARY: readonly string[] = makeVocabulary();

/** Cumulative Zipf weights of VOCABULARY, for drawing a rank with one binary search. */
const CUMULATIVE = (() => {
  const sums = new Float64Array(VOCABULARY_SIZE);
  let sum = 0;
  for (let r = 0; r < VOCABULARY_SIZE; r++) sums[r] = sum += 1 / (r + 1) ** ZIPF_EXPONENT;
  return sums;
})();

/** A word drawn by Zipf's law. */
function zipfWord(random: () => number): string {
  const target = random() * CUMULATIVE[VOCABULARY_SIZE - 1]!;
  let lo = 0;
  let hi = VOCABULARY_SIZE - 1;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (CUMULATIVE[mid]! < target) lo = mid + 1;
    else hi = mid;
  }
  return VOCABULARY[lo]!;
}

const FIRST_NAMES = ['Alice', 'Bob', 'Carol', 'Dave', 'Erin', 'Frank', 'Grace', 'Heidi', 'Ivan', 'Judy', 'Mallory', 'Niaj', 'Olivia', 'Peggy', 'Rupert', 'Sybil', 'Trent', 'Victor', 'Walter', 'Zoë'];
const LAST_NAMES = ['Smith', 'Jones', 'Müller', 'Garcia', 'Rossi', 'Dubois', 'Kowalski', 'Novak', 'Larsen', 'Silva'];
const TOPICS = ['Invoice', 'Order', 'Meeting notes', 'Quarterly report', 'Support ticket', 'Shipping update', 'Contract draft', 'Release plan', 'Budget review', 'Travel booking'];

export interface Sender {
  name: string;
  address: string;
}

/** `count` senders spread over `domains` domains (sender1.test … senderN.test). */
export function senders(count: number, domains: number): Sender[] {
  return Array.from({ length: count }, (_, i) => {
    const first = FIRST_NAMES[i % FIRST_NAMES.length]!;
    const last = LAST_NAMES[Math.floor(i / FIRST_NAMES.length) % LAST_NAMES.length]!;
    return { name: `${first} ${last}`, address: `${first.toLowerCase().replace(/[^a-z]/g, '')}.${i}@sender${(i % domains) + 1}.test` };
  });
}

/** About `bytes` of prose in lines under 78 characters, paragraphs separated by blank lines. */
export function prose(random: () => number, bytes: number): string {
  const lines: string[] = [];
  let size = 0;
  let line = '';
  let sentence = 0;
  while (size < bytes) {
    let word = zipfWord(random);
    if (sentence === 0) word = word[0]!.toUpperCase() + word.slice(1);
    sentence++;
    if (sentence > 6 + Math.floor(random() * 10)) {
      word += '.';
      sentence = 0;
    }
    if (line.length + word.length + 1 > 76) {
      lines.push(line);
      size += line.length + 1;
      line = '';
      if (random() < 0.12) {
        lines.push('');
        size += 1;
      }
    }
    line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines.join('\n');
}

/** A simple HTML rendering of `prose` text (paragraphs), as an HTML alternative part. */
export function html(text: string): string {
  const paragraphs = text
    .split('\n\n')
    .map((p) => `<p style="margin:0 0 12px 0;font-family:Arial,sans-serif">${p.replace(/\n/g, ' ')}</p>`)
    .join('\n');
  return `<!doctype html>\n<html><head><meta charset="utf-8"></head><body>\n${paragraphs}\n</body></html>`;
}

export interface MailMix {
  /** Approximate size of the text part in bytes (the HTML alternative, when present, comes on top). */
  textBytes: number;
  /** Share of messages with an HTML alternative (0..1). */
  htmlShare: number;
  /** Share of messages that reply to an earlier one (In-Reply-To, References, "Re:" subject). */
  replyShare: number;
  /** Share of messages with one attachment of `attachmentBytes` (0..1). */
  attachmentShare: number;
  attachmentBytes: number;
}

/** What a generator hands out: nodemailer's message options plus its SMTP envelope. */
export interface GeneratedMail {
  options: SendMailOptions;
  envelope: { from: string; to: string[] };
  hasAttachment: boolean;
}

/**
 * An endless source of messages to `recipient`. `runId` goes into every Message-ID so separate runs
 * never collide (a collision would thread unrelated messages together).
 */
export function mailGenerator(recipient: string, mix: MailMix, seed: number, runId: string): () => GeneratedMail {
  const random = seededRandom(seed);
  const from = senders(200, 20);
  const attachment = Buffer.alloc(mix.attachmentBytes);
  const fill = seededRandom(seed ^ 0x5eed);
  // Random bytes: incompressible, as a real PDF or image mostly is.
  for (let i = 0; i < attachment.length; i++) attachment[i] = Math.floor(fill() * 256);
  // Recent messages a reply may point at (a small window, as real conversations are recent).
  const recent: Array<{ messageId: string; subject: string; sender: Sender }> = [];
  let n = 0;
  return () => {
    n++;
    const sender = from[Math.floor(random() * from.length)]!;
    const messageId = `<bench.${runId}.${n}@${sender.address.split('@')[1]!}>`;
    const text = prose(random, Math.max(64, Math.round(mix.textBytes * (0.6 + random() * 0.8))));
    const reply = recent.length > 0 && random() < mix.replyShare ? recent[Math.floor(random() * recent.length)]! : null;
    const subject = reply ? (reply.subject.startsWith('Re: ') ? reply.subject : `Re: ${reply.subject}`) : `${TOPICS[Math.floor(random() * TOPICS.length)]!} ${1000 + Math.floor(random() * 9_000_000)}`;
    const withHtml = random() < mix.htmlShare;
    const withAttachment = random() < mix.attachmentShare;
    const options: SendMailOptions = {
      from: { name: sender.name, address: sender.address },
      to: recipient,
      subject,
      messageId,
      date: new Date(Date.UTC(2026, 0, 1) + n * 60_000),
      text,
      ...(withHtml ? { html: html(text) } : {}),
      ...(reply ? { inReplyTo: reply.messageId, references: [reply.messageId] } : {}),
      ...(withAttachment ? { attachments: [{ filename: `document-${n}.pdf`, content: attachment, contentType: 'application/pdf' }] } : {}),
    };
    recent.push({ messageId, subject, sender });
    if (recent.length > 50) recent.shift();
    return { options, envelope: { from: sender.address, to: [recipient] }, hasAttachment: withAttachment };
  };
}

/**
 * The `imap` suite's mailbox: one Maildir of generated mail (lib/mail-content.ts) that both servers get byte for
 * byte, Mailroom through `mailroom admin import-mailbox`, Dovecot as its INBOX. A mix of sizes: short notes, everyday
 * mail with some attachments, long mail with more; an HTML alternative on many, so a good share are MIME multiparts.
 * Seven in ten are read (`:2,S`). The word for `SEARCH TEXT` is chosen from what was written: a made-up word of the
 * vocabulary's tail in about 1 % of the messages, contained in no other word that occurs (IMAP's TEXT matches
 * substrings, a word index whole words: both then find the same messages).
 */
import { mkdir, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import MailComposer from 'nodemailer/lib/mail-composer';
import { mailGenerator, seededRandom, VOCABULARY, type GeneratedMail, type MailMix } from './mail-content.js';

/** Each kind of mail and its share of the mailbox. */
const KINDS: ReadonlyArray<{ share: number; mix: MailMix }> = [
  { share: 0.45, mix: { textBytes: 600, htmlShare: 0.2, replyShare: 0.3, attachmentShare: 0, attachmentBytes: 0 } },
  { share: 0.4, mix: { textBytes: 3000, htmlShare: 0.5, replyShare: 0.25, attachmentShare: 0.08, attachmentBytes: 40 * 1024 } },
  { share: 0.15, mix: { textBytes: 12_000, htmlShare: 0.4, replyShare: 0.2, attachmentShare: 0.25, attachmentBytes: 120 * 1024 } },
];
const SEED = 0x1a4a9;
const READ_SHARE = 0.7;
/** The search word's share of messages, and how far from it a candidate may be. */
const WORD_SHARE = 0.01;
/** Vocabulary ranks below this are everyday words (in most messages). */
const TAIL_FROM = 150;

export interface BenchMaildir {
  /** The Maildir (cur/new/tmp) of every message. */
  dir: string;
  /** A Maildir of the first `smallCount` of them (the IDLE cases' mailbox). */
  smallDir: string;
  smallCount: number;
  messages: number;
  bytes: number;
  multipart: number;
  withAttachment: number;
  read: number;
  /** The `SEARCH TEXT` word and how many messages hold it. */
  word: string;
  wordMessages: number;
}

async function makeMaildir(dir: string): Promise<void> {
  for (const sub of ['cur', 'new', 'tmp']) await mkdir(join(dir, sub), { recursive: true });
}

/** The lower-case words of a message's text (its HTML alternative says the same). */
function wordsOf(mail: GeneratedMail): Set<string> {
  const { subject, text: body } = mail.options;
  const text = `${typeof subject === 'string' ? subject : ''}\n${typeof body === 'string' ? body : ''}`.toLowerCase();
  return new Set(text.split(/[^a-z]+/).filter((w) => w.length > 0));
}

/** A tail word of about WORD_SHARE × messages, that no other occurring word contains. */
function chooseWord(documentFrequency: Map<string, number>, messages: number): { word: string; count: number } {
  const target = Math.max(1, Math.round(messages * WORD_SHARE));
  const rank = new Map(VOCABULARY.map((w, i) => [w, i]));
  const occurring = [...documentFrequency.keys()];
  const candidates = [...documentFrequency]
    .filter(([w]) => w.length >= 6 && (rank.get(w) ?? 0) >= TAIL_FROM)
    .sort((a, b) => Math.abs(a[1] - target) - Math.abs(b[1] - target) || a[0].localeCompare(b[0]));
  for (const [word, count] of candidates.slice(0, 200)) {
    if (!occurring.some((other) => other !== word && other.includes(word))) return { word, count };
  }
  throw new Error(`no search word found near ${target} messages`);
}

/** Writes the mailbox of `messages` messages to `root`/maildir (and the small one to `root`/maildir-small). */
export async function writeBenchMaildir(root: string, messages: number, recipient: string, smallCount: number): Promise<BenchMaildir> {
  const dir = join(root, 'maildir');
  const smallDir = join(root, 'maildir-small');
  await makeMaildir(dir);
  await makeMaildir(smallDir);
  const generators = KINDS.map((kind, i) => mailGenerator(recipient, kind.mix, SEED + i, `imap${i}`));
  const random = seededRandom(SEED ^ 0x77);
  const documentFrequency = new Map<string, number>();
  const summary = { bytes: 0, multipart: 0, withAttachment: 0, read: 0 };
  for (let n = 1; n <= messages; n++) {
    let pick = random();
    const kind = KINDS.findIndex((k) => (pick -= k.share) < 0);
    const mail = generators[kind === -1 ? 0 : kind]!();
    const raw = await new MailComposer(mail.options).compile().build();
    for (const word of wordsOf(mail)) documentFrequency.set(word, (documentFrequency.get(word) ?? 0) + 1);
    const read = random() < READ_SHARE;
    // Names sort in the order written, the order both servers give UIDs in.
    const name = `${1_700_000_000 + n}.M${String(n).padStart(7, '0')}P1.bench:2,${read ? 'S' : ''}`;
    const date = new Date(Date.UTC(2025, 0, 1) + n * 60_000);
    for (const target of n <= smallCount ? [dir, smallDir] : [dir]) {
      await writeFile(join(target, 'cur', name), raw);
      await utimes(join(target, 'cur', name), date, date);
    }
    summary.bytes += raw.length;
    if (mail.options.html !== undefined || mail.hasAttachment) summary.multipart++;
    if (mail.hasAttachment) summary.withAttachment++;
    if (read) summary.read++;
  }
  const { word, count } = chooseWord(documentFrequency, messages);
  return { dir, smallDir, smallCount: Math.min(smallCount, messages), messages, ...summary, word, wordMessages: count };
}

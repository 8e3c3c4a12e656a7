/**
 * The arguments of SELECT/EXAMINE (with CONDSTORE and QRESYNC) and APPEND. Each returns a typed value or the
 * BAD text; whether the extension is enabled, the mailbox exists or the size is allowed is the session's to check.
 */
import { parseDateTime } from './datetime.js';
import { parseFlagList } from './flags.js';
import { parseMailboxName } from './mailbox.js';
import { parseSequenceSet, type SequenceSet } from './sequence.js';
import { atomText, number64Of, numberOf, type ParseError, type Token } from './token.js';

export interface QresyncParams {
  uidValidity: number;
  modseq: bigint;
  knownUids?: SequenceSet;
  /** Message numbers and the UIDs the client had at them (RFC 7162 seq-match-data). */
  seqMatch?: { seqs: SequenceSet; uids: SequenceSet };
}

export interface SelectCommand {
  mailbox: string;
  condstore: boolean;
  qresync?: QresyncParams;
}

export function parseSelectCommand(args: readonly Token[], options: { utf8: boolean }): SelectCommand | ParseError {
  const mailbox = parseMailboxName(args[0], options);
  if (typeof mailbox !== 'string') return mailbox;
  const cmd: SelectCommand = { mailbox, condstore: false };
  if (args.length === 1) return cmd;
  const params = args[1];
  if (args.length !== 2 || params?.type !== 'list') return { bad: 'Invalid SELECT parameters.' };
  for (let i = 0; i < params.items.length; i++) {
    const name = atomText(params.items[i])?.toUpperCase();
    if (name === 'CONDSTORE' && !cmd.condstore) cmd.condstore = true;
    else if (name === 'QRESYNC' && !cmd.qresync) {
      const q = parseQresync(params.items[++i]);
      if ('bad' in q) return q;
      cmd.qresync = q;
    } else return { bad: 'Unknown SELECT parameter.' };
  }
  return cmd;
}

/** `(uidvalidity modseq [known-uids [(known-sequence-set known-uid-set)]])`. */
function parseQresync(t: Token | undefined): QresyncParams | ParseError {
  const fail = { bad: 'Invalid QRESYNC parameters.' };
  if (t?.type !== 'list' || t.items.length < 2 || t.items.length > 4) return fail;
  const [v, m, known, match] = t.items;
  const uidValidity = numberOf(v);
  const modseq = number64Of(m);
  if (uidValidity === null || uidValidity === 0 || modseq === null || modseq === 0n) return fail;
  const q: QresyncParams = { uidValidity, modseq };
  if (known) {
    if (known.type === 'list') return match ? fail : (parseSeqMatch(known, q) ?? q);
    const set = parseSequenceSet(known);
    if ('bad' in set || set.saved || set.ranges.some((r) => r.from === '*' || r.to === '*')) return fail;
    q.knownUids = set;
  }
  if (match) {
    if (match.type !== 'list') return fail;
    const r = parseSeqMatch(match, q);
    if (r) return r;
  }
  return q;
}

function parseSeqMatch(t: Token & { type: 'list' }, q: QresyncParams): ParseError | null {
  const seqs = parseSequenceSet(t.items[0]);
  const uids = parseSequenceSet(t.items[1]);
  if (t.items.length !== 2 || 'bad' in seqs || 'bad' in uids || seqs.saved || uids.saved) return { bad: 'Invalid QRESYNC parameters.' };
  q.seqMatch = { seqs, uids };
  return null;
}

export interface AppendCommand {
  mailbox: string;
  flags: string[];
  date?: { date: Date; zone: number };
  message: Buffer;
  /** Sent as literal8 (`~{n}`, BINARY), or inside `UTF8 (~{n})` (UTF8=ACCEPT). */
  binary: boolean;
  utf8: boolean;
}

/** `APPEND mailbox [(flags)] ["date-time"] literal` (one message; MULTIAPPEND is not offered). */
export function parseAppendCommand(args: readonly Token[], options: { utf8: boolean }): AppendCommand | ParseError {
  const mailbox = parseMailboxName(args[0], options);
  if (typeof mailbox !== 'string') return mailbox;
  let i = 1;
  let flags: string[] = [];
  if (args[i]?.type === 'list') {
    const f = parseFlagList(args[i]);
    if ('bad' in f) return f;
    flags = f;
    i++;
  }
  let date: AppendCommand['date'];
  if (args[i]?.type === 'string') {
    const d = parseDateTime(args[i]);
    if ('bad' in d) return d;
    date = d;
    i++;
  }
  let data = args[i];
  let utf8 = false;
  if (data?.type === 'atom' && data.value.toUpperCase() === 'UTF8') {
    const inner = args[i + 1];
    data = inner?.type === 'list' && inner.items.length === 1 ? inner.items[0] : undefined;
    utf8 = true;
    i++;
    if (data?.type !== 'literal' || !data.binary) return { bad: 'Invalid UTF8 APPEND data.' };
  }
  if (data?.type !== 'literal') return { bad: 'Missing message literal.' };
  if (i + 1 !== args.length) return { bad: 'Only one message can be appended.' };
  const cmd: AppendCommand = { mailbox, flags, message: data.value, binary: data.binary, utf8 };
  if (date) cmd.date = date;
  return cmd;
}

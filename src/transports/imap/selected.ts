/**
 * The selected state: the session's view of one folder (message numbers are positions in its UID-ordered index),
 * kept current at NOOP, CHECK and IDLE (woken by the mailbox's change signal), and the commands that work on its
 * messages.
 */
import type { CopyOutcome, FetchEntry, FetchRead, ImapFolder, IndexEntry } from '../../modules/imap-access/imap-access.service.js';
import { fetchPlan, fetchRead, flagsOf, ResponseBytes, setsSeen, UnknownCteError, writeFetch } from './fetch-items.js';
import { atomText, formatRanges, parseFetchCommand, parseMailboxName, parseSequenceSet, parseSearchCommand, parseStoreCommand, resolveSequenceSet, inRanges, type Command, type FetchItem, type QresyncParams, type Ranges, type ResponseCode, type ReturnOption, type SearchKey, type SequenceSet } from './protocol/index.js';
import { RunReads } from './fetch-run.js';
import { hasModseqKey, matches, searchNeeds, textKey, textKeys, type SearchContext, type SearchEntry, type TextAnswers } from './search-eval.js';
import type { ImapSession } from './session.js';

/** Messages read per statement while fetching or searching (memory follows the batch, not the folder). */
const BATCH = 100;
/** Messages a FETCH reads per statement when it reads no raw bytes (flags and kept structures: about 1 KB a message). */
const SMALL_ROW_BATCH = 500;
/** Batches of small rows read while the one before them is written: the statements overlap the writes and each other. */
const READ_AHEAD = 2;
/** UID ranges per store call (the store's bound). */
const MAX_UID_RANGES = 1000;
/** Distinct text keys in one SEARCH (each is one full-text statement). */
export const MAX_TEXT_KEYS = 16;
/** Characters of a text key's string (the search API's query is at most 1,000 too). */
export const MAX_TEXT_LENGTH = 1000;

interface Target {
  seq: number;
  entry: IndexEntry;
}

/** Consecutive UIDs as ranges, for the store's UID-range calls. */
function toRanges(uids: readonly number[]): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  for (const uid of [...uids].sort((a, b) => a - b)) {
    const last = out[out.length - 1];
    if (last && uid === last[1] + 1) last[1] = uid;
    else out.push([uid, uid]);
  }
  return out;
}

/** UIDPLUS's `COPYUID uidvalidity source-uids target-uids` (RFC 4315); none when nothing was copied. */
function copyUid(outcome: CopyOutcome): ResponseCode | undefined {
  if (outcome.source.length === 0) return undefined;
  return { name: 'COPYUID', args: [outcome.uidvalidity, { atom: formatRanges(toRanges(outcome.source)) }, { atom: formatRanges(toRanges(outcome.target)) }] };
}

export class SelectedCommands {
  private entries: IndexEntry[] = [];
  private highestModseq = 0;
  /** The folder's UIDVALIDITY when selected: a renumbering (UIDs past 32 bits) changes it under the session. */
  private uidValidity = 0;
  /**
   * SEARCHRES's `$`: the UIDs a SEARCH RETURN (SAVE) saved, as ranges. UIDs, so an expunged message drops out of it
   * by itself; it lives as long as this selection (a new SELECT, UNSELECT or CLOSE ends it, RFC 5182).
   */
  private saved: Ranges = [];
  private ahead: RunReads | null = null;

  constructor(
    private readonly s: ImapSession,
    readonly folder: ImapFolder,
    readonly readOnly: boolean,
  ) {}

  private get account() {
    return this.s.account!;
  }

  private get condstore(): boolean {
    return this.s.enabled.has('CONDSTORE');
  }

  /** SELECT's untagged responses (and QRESYNC's changes since the client's modseq). */
  async open(qresync?: QresyncParams): Promise<void> {
    // Status first: it renumbers a folder whose UIDs ran past 32 bits, and the index must be read after that.
    const status = await this.s.access.status(this.account, this.folder);
    const entries = await this.s.access.index(this.account, this.folder);
    this.entries = entries;
    this.highestModseq = status.highestmodseq;
    this.uidValidity = status.uidvalidity;
    const w = this.s.writer;
    const keywords = [...new Set(entries.flatMap((e) => e.labels))].sort();
    w.untagged({ atom: 'FLAGS' }, ['\\Answered', '\\Flagged', '\\Deleted', '\\Seen', '\\Draft', ...keywords].map((atom) => ({ atom })));
    const permanent = this.readOnly ? [] : ['\\Answered', '\\Flagged', '\\Deleted', '\\Seen', ...keywords, '\\*'];
    w.status('OK', this.readOnly ? 'No permanent flags permitted.' : 'Flags permitted.', { name: 'PERMANENTFLAGS', args: [permanent.map((atom) => ({ atom }))] });
    w.untagged(entries.length, { atom: 'EXISTS' });
    w.untagged(0, { atom: 'RECENT' });
    const firstUnseen = entries.findIndex((e) => !e.read);
    if (firstUnseen >= 0) w.status('OK', `First unseen.`, { name: 'UNSEEN', args: [firstUnseen + 1] });
    w.status('OK', 'UIDs valid.', { name: 'UIDVALIDITY', args: [status.uidvalidity] });
    w.status('OK', 'Predicted next UID.', { name: 'UIDNEXT', args: [status.uidnext] });
    // Only once CONDSTORE is enabled (RFC 7162 3.1.2.1), as Dovecot answers; ENABLE later announces it then.
    if (this.condstore) w.status('OK', 'Highest.', { name: 'HIGHESTMODSEQ', args: [status.highestmodseq] });
    if (qresync && qresync.uidValidity === status.uidvalidity) {
      const since = Number(qresync.modseq);
      const gone = await this.s.access.expungedSince(this.account, this.folder, since);
      if (gone.length > 0) w.untagged({ atom: 'VANISHED' }, [{ atom: 'EARLIER' }], { atom: formatRanges(toRanges(gone)) });
      entries.forEach((e, i) => {
        if (e.modseq > since) w.untagged(i + 1, { atom: 'FETCH' }, [{ atom: 'UID' }, e.uid, { atom: 'FLAGS' }, flagsOf(e).map((atom) => ({ atom })), { atom: 'MODSEQ' }, [e.modseq]]);
      });
    }
    this.s.send(w);
  }

  /** Report what changed since the view was last current: new messages, flag changes, and (when allowed) expunges. */
  async sync(expunges: boolean): Promise<void> {
    const fresh = await this.s.access.index(this.account, this.folder);
    if (await this.renumbered(fresh)) return this.s.bye('Mailbox UIDVALIDITY changed');
    const w = this.s.writer;
    const byUid = new Map(fresh.map((e) => [e.uid, e]));
    if (expunges) {
      const gone: number[] = [];
      for (let i = this.entries.length - 1; i >= 0; i--) {
        const uid = this.entries[i]!.uid;
        if (byUid.has(uid)) continue;
        gone.push(uid);
        if (!this.s.enabled.has('QRESYNC')) w.untagged(i + 1, { atom: 'EXPUNGE' });
        this.entries.splice(i, 1);
      }
      if (gone.length > 0 && this.s.enabled.has('QRESYNC')) w.untagged({ atom: 'VANISHED' }, { atom: formatRanges(toRanges(gone)) });
    }
    this.entries.forEach((e, i) => {
      const now = byUid.get(e.uid);
      if (!now || now.modseq === e.modseq) return;
      this.entries[i] = now;
      this.flagsResponse(i + 1, now, false);
    });
    const maxUid = this.entries.length > 0 ? this.entries[this.entries.length - 1]!.uid : 0;
    const added = fresh.filter((e) => e.uid > maxUid);
    if (added.length > 0) {
      // A loop, not a spread: a spread of a large folder's entries would pass them as arguments, past the stack's room.
      for (const e of added) this.entries.push(e);
      w.untagged(this.entries.length, { atom: 'EXISTS' });
    }
    for (const e of fresh) if (e.modseq > this.highestModseq) this.highestModseq = e.modseq;
    this.s.send(w);
  }

  /**
   * Whether the folder was renumbered since it was selected. UIDs only grow, so a UID this view does not hold below
   * its highest, or one it holds gone, is the sign to look at UIDVALIDITY (a read only then). Dovecot, too, ends a
   * session whose mailbox changed UIDVALIDITY: clients would take the new UIDs for the old messages.
   */
  private async renumbered(fresh: IndexEntry[]): Promise<boolean> {
    const known = new Set(this.entries.map((e) => e.uid));
    const maxUid = this.entries.at(-1)?.uid ?? 0;
    const suspect = fresh.some((e) => e.uid < maxUid && !known.has(e.uid)) || fresh.filter((e) => known.has(e.uid)).length < known.size;
    if (!suspect) return false;
    return (await this.s.access.status(this.account, this.folder)).uidvalidity !== this.uidValidity;
  }

  private flagsResponse(seq: number, e: IndexEntry, uid: boolean): void {
    const items: unknown[] = [];
    // UID, MODSEQ, FLAGS: Dovecot's order for flag changes.
    if (uid || this.s.enabled.has('QRESYNC')) items.push({ atom: 'UID' }, e.uid);
    if (this.condstore) items.push({ atom: 'MODSEQ' }, [e.modseq]);
    items.push({ atom: 'FLAGS' }, flagsOf(e).map((atom) => ({ atom })));
    this.s.writer.untagged(seq, { atom: 'FETCH' }, items as never);
  }

  /** True when the command is one of the selected state's (answered). */
  async command(cmd: Command): Promise<boolean> {
    const uid = cmd.name.startsWith('UID ');
    switch (cmd.name) {
      case 'FETCH': case 'UID FETCH': await this.fetch(cmd, uid); return true;
      case 'STORE': case 'UID STORE': await this.store(cmd, uid); return true;
      case 'SEARCH': case 'UID SEARCH': await this.search(cmd, uid); return true;
      case 'EXPUNGE': case 'UID EXPUNGE': await this.expunge(cmd, uid); return true;
      case 'CHECK': await this.sync(true); this.s.tagged(cmd.tag, 'OK', 'Check completed.'); return true;
      case 'CLOSE':
      case 'UNSELECT':
        if (cmd.name === 'CLOSE' && !this.readOnly) await this.s.access.expunge(this.account, this.folder);
        this.s.selected = null;
        this.s.state = 'authenticated';
        this.s.tagged(cmd.tag, 'OK', `${cmd.name === 'CLOSE' ? 'Close' : 'Unselect'} completed.`);
        return true;
      case 'IDLE': await this.s.idle(cmd, () => this.watch()); return true;
      case 'COPY': case 'UID COPY': await this.copy(cmd, uid, false); return true;
      case 'MOVE': case 'UID MOVE': await this.copy(cmd, uid, true); return true;
      default:
        return false;
    }
  }

  /** The messages a set names, in message-number order; a ParseError text for a message number past the end. */
  private targets(set: SequenceSet, uid: boolean): Target[] | string {
    if (set.saved) {
      const out: Target[] = [];
      this.entries.forEach((entry, i) => inRanges(this.saved, entry.uid) && out.push({ seq: i + 1, entry }));
      return out;
    }
    const maxUid = this.entries.length > 0 ? this.entries[this.entries.length - 1]!.uid : 0;
    const ranges = resolveSequenceSet(set, uid ? maxUid : this.entries.length, { uid });
    if ('bad' in ranges) return ranges.bad;
    const out: Target[] = [];
    if (uid) {
      // Entries are in UID order and the ranges sorted and apart: each range starts at a binary search, so a client
      // fetching one UID at a time (mbsync) costs a log of the folder per command, not the folder.
      for (const [lo, hi] of ranges) {
        for (let i = firstAtOrAbove(this.entries, lo); i < this.entries.length && this.entries[i]!.uid <= hi; i++) out.push({ seq: i + 1, entry: this.entries[i]! });
      }
    } else for (const [lo, hi] of ranges) for (let n = lo; n <= hi; n++) out.push({ seq: n, entry: this.entries[n - 1]! });
    return out;
  }

  /**
   * Before a run of pipelined FETCHes (a client pulling one message a command), the reads of their messages begin
   * (fetch-run.ts): those of the FETCHes up to the first that reads otherwise, sets \Seen, asks CHANGEDSINCE (its
   * flags would be older than its own change) or names more than one read takes. What a FETCH finds there it answers
   * from; the rest it reads itself.
   */
  readAhead(cmds: readonly Command[]): void {
    this.ahead = null;
    if (cmds.length < 2) return;
    let ahead: RunReads | null = null;
    for (const cmd of cmds) {
      const p = parseFetchCommand(cmd.args, { uid: cmd.name === 'UID FETCH' });
      if ('bad' in p) break;
      const targets = this.targets(p.set, cmd.name === 'UID FETCH');
      if (typeof targets === 'string' || p.changedSince !== undefined || (setsSeen(p.items) && !this.readOnly)) break;
      const kind = fetchRead(p.items);
      ahead ??= new RunReads(kind, (uids, read) => this.s.access.messages(this.account, this.folder, toRanges(uids), read));
      if (kind !== ahead.read || !ahead.add(cmd, p, targets.map((t) => t.entry))) break;
    }
    if (!ahead || ahead.empty) return;
    ahead.start();
    this.ahead = ahead;
  }

  /** The run is answered: its rows are let go. */
  dropReadAhead(): void {
    this.ahead = null;
  }

  /** The rows of `uids`: from the run's reads when they serve this FETCH and hold them all, else read now. */
  private async rowsOf(cmd: Command, uids: readonly number[], read: FetchRead): Promise<FetchEntry[]> {
    return (await this.ahead?.rowsOf(cmd, uids)) ?? this.s.access.messages(this.account, this.folder, toRanges(uids), read);
  }

  private async fetch(cmd: Command, uid: boolean): Promise<void> {
    const parsed = this.ahead?.parsedOf(cmd) ?? parseFetchCommand(cmd.args, { uid });
    if ('bad' in parsed) return this.s.tagged(cmd.tag, 'BAD', parsed.bad);
    let targets = this.targets(parsed.set, uid);
    if (typeof targets === 'string') return this.s.tagged(cmd.tag, 'BAD', targets);
    if (parsed.changedSince !== undefined || parsed.items.some((i) => i.kind === 'MODSEQ')) await this.s.enableCondstore();
    if (parsed.changedSince !== undefined) {
      const since = Number(parsed.changedSince);
      targets = targets.filter((t) => t.entry.modseq > since);
    }
    const markSeen = setsSeen(parsed.items) && !this.readOnly;
    let items: FetchItem[] = parsed.items;
    // FLAGS nobody asked for goes only with the messages this FETCH marked \Seen, as Dovecot sends it.
    let newlySeen = new Set<number>();
    if (markSeen) {
      const unread = targets.filter((t) => !t.entry.read).map((t) => t.entry.uid);
      if (unread.length > 0) await this.s.access.store(this.account, this.folder, toRanges(unread), { mode: 'add', flags: { read: true }, keywords: [] });
      if (unread.length > 0 && !items.some((i) => i.kind === 'FLAGS')) {
        items = [...items, { kind: 'FLAGS' }];
        newlySeen = new Set(unread);
      }
    }
    const modseq = this.condstore && (parsed.changedSince !== undefined || items.some((i) => i.kind === 'MODSEQ'));
    const read = fetchRead(items);
    const plan = fetchPlan(items, { uid, modseq });
    const unaskedPlan = newlySeen.size > 0 ? fetchPlan(parsed.items, { uid, modseq }) : plan;
    const out = new ResponseBytes();
    const write = (t: Target, row: FetchEntry) => {
      // The same modseq is the same flags: the entry the session holds stays (most FETCHes change none).
      if (row.modseq !== t.entry.modseq) this.entries[t.seq - 1] = indexOf(row);
      writeFetch(out, t.seq, row, newlySeen.size > 0 && !newlySeen.has(row.uid) ? unaskedPlan : plan);
    };
    try {
      await (read === 'raw' ? this.answerRaw(cmd, targets, out, write) : this.answerRows(cmd, targets, read, out, write));
    } catch (err) {
      // The messages answered before the one that failed are sent, as Dovecot sends them.
      await this.s.sendBytes(out.take());
      if (err instanceof UnknownCteError) return this.s.tagged(cmd.tag, 'NO', err.code === 'PARSE' ? 'The message part does not decode.' : 'Unknown Content-Transfer-Encoding.', { name: err.code });
      throw err;
    }
    this.s.tagged(cmd.tag, 'OK', 'Fetch completed.');
  }

  /**
   * FETCH's answers from rows without raw bytes: 500 messages a statement, the next READ_AHEAD statements read while
   * a batch is written; each batch's answers go out in one write.
   */
  private async answerRows(cmd: Command, targets: readonly Target[], read: FetchRead, out: ResponseBytes, write: (t: Target, row: FetchEntry) => void): Promise<void> {
    const load = (i: number) => {
      if (i >= targets.length) return null;
      const uids = targets.slice(i, i + SMALL_ROW_BATCH).map((t) => t.entry.uid);
      const rows = this.rowsOf(cmd, uids, read);
      // A read that fails while an earlier batch is awaited is not an unhandled rejection: its own await throws.
      rows.catch(() => undefined);
      return rows;
    };
    const reading = Array.from({ length: READ_AHEAD }, (_, k) => load(k * SMALL_ROW_BATCH));
    for (let i = 0; i < targets.length; i += SMALL_ROW_BATCH) {
      const rows = (await (reading.shift() ?? load(i)))!;
      reading.push(load(i + READ_AHEAD * SMALL_ROW_BATCH));
      const byUid = new Map<number, FetchEntry>();
      for (const r of rows) byUid.set(r.uid, r);
      for (let j = i; j < i + SMALL_ROW_BATCH && j < targets.length; j++) {
        const row = byUid.get(targets[j]!.entry.uid);
        if (row) write(targets[j]!, row);
      }
      await this.s.sendBytes(out.take());
    }
  }

  /**
   * FETCH's answers from raw sources: a batch's messages (or the run's read ahead) a bounded read at a time
   * (rawReads), each read's answers written before the next read, so memory follows the read.
   */
  private async answerRaw(cmd: Command, targets: readonly Target[], out: ResponseBytes, write: (t: Target, row: FetchEntry) => void): Promise<void> {
    for (let i = 0; i < targets.length; i += BATCH) {
      const batch = targets.slice(i, i + BATCH);
      const uids = batch.map((t) => t.entry.uid);
      const ahead = (await this.ahead?.rowsOf(cmd, uids)) ?? null;
      let j = 0;
      // Targets and rows are both in UID order: each read answers the targets up to its last row.
      for await (const rows of ahead ? [ahead] : this.s.access.rawReads(this.account, this.folder, batch.map((t) => t.entry))) {
        const byUid = new Map<number, FetchEntry>();
        for (const r of rows) byUid.set(r.uid, r);
        const last = rows[rows.length - 1]?.uid ?? 0;
        for (; j < batch.length && batch[j]!.entry.uid <= last; j++) {
          const row = byUid.get(batch[j]!.entry.uid);
          if (row) write(batch[j]!, row);
        }
        await this.s.sendBytes(out.take());
      }
    }
  }

  private async store(cmd: Command, uid: boolean): Promise<void> {
    const parsed = parseStoreCommand(cmd.args);
    if ('bad' in parsed) return this.s.tagged(cmd.tag, 'BAD', parsed.bad);
    const targets = this.targets(parsed.set, uid);
    if (typeof targets === 'string') return this.s.tagged(cmd.tag, 'BAD', targets);
    if (parsed.unchangedSince !== undefined) await this.s.enableCondstore();
    // As Dovecot answers: a STORE on an EXAMINEd folder is ignored, a conditional one fails.
    if (this.readOnly && parsed.unchangedSince !== undefined) return this.s.tagged(cmd.tag, 'NO', 'CONDSTORE failed: Mailbox is read-only.');
    if (this.readOnly) return this.s.tagged(cmd.tag, 'OK', 'Store ignored with read-only mailbox.');
    const flags: { read?: boolean; flagged?: boolean; answered?: boolean; deleted?: boolean } = {};
    const keywords: string[] = [];
    for (const f of parsed.flags) {
      const lower = f.toLowerCase();
      if (lower === '\\seen') flags.read = true;
      else if (lower === '\\flagged') flags.flagged = true;
      else if (lower === '\\answered') flags.answered = true;
      else if (lower === '\\deleted') flags.deleted = true;
      else if (!f.startsWith('\\')) keywords.push(f);
    }
    const uids = targets.map((t) => t.entry.uid);
    const change = { mode: parsed.op, flags, keywords, unchangedSince: parsed.unchangedSince === undefined ? undefined : Number(parsed.unchangedSince) };
    let failed: number[] = [];
    for (let i = 0; i < uids.length; i += BATCH * 10) {
      const result = await this.s.access.store(this.account, this.folder, toRanges(uids.slice(i, i + BATCH * 10)), change);
      failed = failed.concat(result.failed);
    }
    const seqOf = new Map(targets.map((t) => [t.entry.uid, t.seq]));
    for (let i = 0; i < targets.length; i += BATCH) {
      const rows = await this.s.access.messages(this.account, this.folder, toRanges(uids.slice(i, i + BATCH)), 'index');
      for (const row of rows) {
        const seq = seqOf.get(row.uid)!;
        const changed = this.entries[seq - 1]!.modseq !== row.modseq;
        this.entries[seq - 1] = indexOf(row);
        // SILENT leaves out the flags, but a change the client did not ask for is still reported (RFC 7162 3.1.3).
        if (!parsed.silent || (changed && parsed.unchangedSince !== undefined)) this.flagsResponse(seq, row, uid);
      }
    }
    this.s.send(this.s.writer);
    if (failed.length > 0) {
      const numbers = uid ? failed : failed.map((u) => seqOf.get(u)!);
      return this.s.tagged(cmd.tag, 'OK', 'Conditional store failed.', { name: 'MODIFIED', args: [{ atom: formatRanges(toRanges(numbers)) }] });
    }
    this.s.tagged(cmd.tag, 'OK', 'Store completed.');
  }

  private async search(cmd: Command, uid: boolean): Promise<void> {
    const parsed = parseSearchCommand(cmd.args);
    // A SEARCH that would have saved and fails leaves `$` empty (RFC 5182 2.1).
    const saves = atomText(cmd.args[0])?.toUpperCase() === 'RETURN' && cmd.args[1]?.type === 'list' && cmd.args[1].items.some((t) => atomText(t)?.toUpperCase() === 'SAVE');
    const fail = (status: 'NO' | 'BAD', text: string, code?: ResponseCode) => {
      if (saves) this.saved = [];
      this.s.tagged(cmd.tag, status, text, code);
    };
    if ('bad' in parsed) return fail(parsed.no ? 'NO' : 'BAD', parsed.bad, parsed.code ? { name: parsed.code.split(' ')[0]!, args: parsed.code.includes('(') ? [parsed.code.slice(parsed.code.indexOf('(') + 1, -1).split(' ').map((atom) => ({ atom }))] : [] } : undefined);
    const keys = [...textKeys(parsed.key).values()];
    if (keys.length > MAX_TEXT_KEYS) return fail('NO', `At most ${MAX_TEXT_KEYS} different text keys in one SEARCH.`, { name: 'LIMIT' });
    if (keys.some((k) => k.value.length > MAX_TEXT_LENGTH)) return fail('NO', `A search string is at most ${MAX_TEXT_LENGTH} characters.`, { name: 'LIMIT' });
    const text: TextAnswers = new Map();
    // An empty folder needs no index statement.
    for (const k of this.entries.length === 0 ? [] : keys) {
      const answer = await this.s.access.searchText(this.account, this.folder, k.field, k.value);
      if (!answer.ok) return fail('NO', `Search failed: ${answer.text}`, { name: 'UNAVAILABLE' });
      text.set(textKey(k.field, k.value), answer.uids === null ? null : new Set(answer.uids));
    }
    const found = await this.evaluate(parsed.key, text);
    this.answer(cmd.tag, uid, parsed.return, found, hasModseqKey(parsed.key));
    this.s.tagged(cmd.tag, 'OK', parsed.return?.includes('SAVE') ? 'Search completed, result saved.' : 'Search completed.');
  }

  /** The matching messages, as (message number, UID), in order: the index alone, or the rows read 100 at a time. */
  private async evaluate(key: SearchKey, text: TextAnswers): Promise<Array<[number, number]>> {
    const needs = searchNeeds(key);
    const found: Array<[number, number]> = [];
    const maxUid = this.entries.length > 0 ? this.entries[this.entries.length - 1]!.uid : 0;
    const ctx: SearchContext = { seq: 0, count: this.entries.length, maxUid, now: Date.now(), saved: this.saved, text };
    if (needs === 'index') {
      // Nothing to read: one pass over the index, no per-message copies.
      this.entries.forEach((e, i) => {
        ctx.seq = i + 1;
        if (matches(key, e, ctx)) found.push([i + 1, e.uid]);
      });
      return found;
    }
    for (let i = 0; i < this.entries.length; i += BATCH) {
      const batch = this.entries.slice(i, i + BATCH);
      const ranges = toRanges(batch.map((e) => e.uid));
      const rows = new Map<number, SearchEntry>();
      for (const r of await this.s.access.messages(this.account, this.folder, ranges, 'index')) rows.set(r.uid, r);
      if (needs === 'headers') {
        for (const h of await this.s.access.headers(this.account, this.folder, ranges)) {
          const row = rows.get(h.uid);
          if (row) row.headers = h.headers;
        }
      }
      batch.forEach((e, j) => {
        const row = rows.get(e.uid);
        // A message expunged since the view was made is not searched (its number stays until the next sync).
        if (!row) return;
        ctx.seq = i + j + 1;
        if (matches(key, { ...e, ...row }, ctx)) found.push([i + j + 1, e.uid]);
      });
    }
    return found;
  }

  /**
   * SEARCH or ESEARCH as RETURN asks, and SAVE's `$` (MIN/MAX alone save only what they name, RFC 5182 2.4). With a
   * MODSEQ key the answer ends with the highest MODSEQ of the messages it names (RFC 7162 3.1.5): of the MIN and MAX
   * messages when they are all it returns, else of every match; none when nothing matched, as Dovecot answers.
   */
  private answer(tag: string, uid: boolean, options: ReturnOption[] | undefined, found: Array<[number, number]>, modseq: boolean): void {
    const numbers = found.map(([seq, u]) => (uid ? u : seq));
    const highest = (list: Array<[number, number]>) => list.reduce((m, [seq]) => Math.max(m, this.entries[seq - 1]?.modseq ?? 0), 0);
    if (options === undefined) {
      const tail = modseq && found.length > 0 ? [[{ atom: 'MODSEQ' }, highest(found)]] : [];
      this.s.send(this.s.writer.untagged({ atom: 'SEARCH' }, ...numbers, ...(tail as never[])));
      return;
    }
    const opts = options.length === 0 ? ['ALL'] : options;
    const first = found[0];
    const last = found[found.length - 1];
    const minMaxOnly = !opts.includes('ALL') && !opts.includes('COUNT') && (opts.includes('MIN') || opts.includes('MAX'));
    const named = !minMaxOnly ? found : [...(opts.includes('MIN') && first ? [first] : []), ...(opts.includes('MAX') && last ? [last] : [])];
    if (opts.includes('SAVE')) {
      this.saved = toRanges(named.map(([, u]) => u));
      // SAVE alone answers nothing but the tagged OK.
      if (opts.length === 1) return;
    }
    const out: unknown[] = [[{ atom: 'TAG' }, tag]];
    if (uid) out.push({ atom: 'UID' });
    if (first && opts.includes('MIN')) out.push({ atom: 'MIN' }, numbers[0]);
    if (last && opts.includes('MAX')) out.push({ atom: 'MAX' }, numbers[numbers.length - 1]);
    if (opts.includes('COUNT')) out.push({ atom: 'COUNT' }, found.length);
    if (found.length > 0 && opts.includes('ALL')) out.push({ atom: 'ALL' }, { atom: formatRanges(toRanges(numbers)) });
    if (modseq && named.length > 0) out.push({ atom: 'MODSEQ' }, highest(named));
    this.s.send(this.s.writer.untagged({ atom: 'ESEARCH' }, ...(out as never[])));
  }

  private async expunge(cmd: Command, uid: boolean): Promise<void> {
    let ranges: Ranges | undefined;
    if (uid) {
      const parsed = parseSequenceSet(cmd.args[0]);
      if ('bad' in parsed || cmd.args.length !== 1) return this.s.tagged(cmd.tag, 'BAD', 'Invalid UID EXPUNGE arguments.');
      const resolved = resolveSequenceSet(parsed, Number.MAX_SAFE_INTEGER, { uid: true, saved: this.saved });
      if ('bad' in resolved) return this.s.tagged(cmd.tag, 'BAD', resolved.bad);
      ranges = resolved;
    } else if (cmd.args.length > 0) return this.s.tagged(cmd.tag, 'BAD', 'EXPUNGE takes no arguments.');
    // An EXAMINEd folder expunges nothing and says OK, as Dovecot does.
    if (this.readOnly) {
      // nothing to expunge
    } else if (ranges === undefined) await this.s.access.expunge(this.account, this.folder);
    // A set (or a saved result) of many ranges is expunged a bounded number of ranges per statement.
    else for (let i = 0; i < ranges.length; i += MAX_UID_RANGES) await this.s.access.expunge(this.account, this.folder, ranges.slice(i, i + MAX_UID_RANGES));
    await this.sync(true);
    this.s.tagged(cmd.tag, 'OK', 'Expunge completed.');
  }

  /**
   * COPY and MOVE (RFC 9051, RFC 6851) answered with COPYUID (RFC 4315). A MOVE sends its COPYUID untagged, then the
   * moved messages' EXPUNGE (VANISHED with QRESYNC) through a sync, which also shows the new ones of a MOVE into the
   * selected folder itself (they take new UIDs there, as in Dovecot).
   */
  private async copy(cmd: Command, uid: boolean, move: boolean): Promise<void> {
    const set = parseSequenceSet(cmd.args[0]);
    const name = parseMailboxName(cmd.args[1], { utf8: this.s.enabled.has('UTF8=ACCEPT') });
    if ('bad' in set || typeof name !== 'string' || cmd.args.length !== 2) {
      return typeof name !== 'string' && name.no && !('bad' in set) ? this.s.tagged(cmd.tag, 'NO', name.bad) : this.s.tagged(cmd.tag, 'BAD', `Invalid ${cmd.name} arguments.`);
    }
    const targets = this.targets(set, uid);
    if (typeof targets === 'string') return this.s.tagged(cmd.tag, 'BAD', targets);
    const to = this.s.access.folder(name);
    if (!to) return this.s.tagged(cmd.tag, 'NO', 'Mailbox does not exist.', { name: 'TRYCREATE' });
    if (move && this.readOnly) return this.s.tagged(cmd.tag, 'NO', 'Mailbox is read-only.', { name: 'READ-ONLY' });
    const uids = targets.map((t) => t.entry.uid);
    if (uids.length === 0) return this.s.tagged(cmd.tag, 'OK', 'No messages found.');
    if (!move) {
      const copied = await this.s.access.copy(this.account, this.folder, to, uids);
      if (!copied.ok) return this.s.tagged(cmd.tag, 'NO', 'The workspace is at its storage quota.', { name: 'OVERQUOTA' });
      return this.s.tagged(cmd.tag, 'OK', 'Copy completed.', copyUid(copied));
    }
    const moved = await this.s.access.move(this.account, this.folder, to, uids);
    const code = copyUid(moved);
    if (code) this.s.send(this.s.writer.status('OK', 'Moved UIDs.', code));
    await this.sync(true);
    this.s.tagged(cmd.tag, 'OK', 'Move completed.');
  }

  /**
   * While IDLE: look at the folder when the mailbox's change signal rings (committed here or, by NOTIFY, in another
   * process), once before the continuation (a change between the client's last command and the IDLE rang nobody),
   * and when the folder's modseq, read every idlePollMs, moved (a notification was lost): the poll reads one row, so
   * thousands of idle sessions cost little. One look at a time; a signal during a look asks for one more after it.
   * Resolves to the stop, which waits for a look under way (its responses precede the tagged OK).
   */
  private async watch(): Promise<() => Promise<void>> {
    let current: Promise<void> | null = null;
    let again = false;
    let stopped = false;
    let polled = await this.s.access.modseq(this.account, this.folder);
    const look = (): Promise<void> | null => {
      if (stopped) return null;
      if (current) {
        again = true;
        return current;
      }
      this.s.options.metrics.imapIdleLook();
      current = this.sync(true)
        .catch((err: unknown) => this.s.options.logger.warn({ err }, 'imap idle sync failed'))
        .finally(() => {
          current = null;
          if (again) {
            again = false;
            void look();
          }
        });
      return current;
    };
    const ring = (): void => void look();
    const unsubscribe = this.s.access.changes(this.account, ring);
    const poll = async (): Promise<void> => {
      const modseq = await this.s.access.modseq(this.account, this.folder);
      if (modseq === polled) return;
      polled = modseq;
      await look();
    };
    const timer = setInterval(() => void poll().catch((err: unknown) => this.s.options.logger.warn({ err }, 'imap idle poll failed')), this.s.options.idlePollMs);
    await look();
    return async () => {
      stopped = true;
      unsubscribe();
      clearInterval(timer);
      await current;
    };
  }
}

/** The position of the first entry whose UID is `uid` or above (entries are in UID order); the length when none. */
function firstAtOrAbove(entries: readonly IndexEntry[], uid: number): number {
  let lo = 0;
  let hi = entries.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (entries[mid]!.uid < uid) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

const indexOf = (row: FetchEntry): IndexEntry => ({ uid: row.uid, modseq: row.modseq, read: row.read, flagged: row.flagged, answered: row.answered, deleted: row.deleted, draft: row.draft === true, labels: row.labels, size: row.size });

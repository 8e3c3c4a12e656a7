/**
 * The selected state: the session's view of one folder (message numbers are positions in its UID-ordered index),
 * kept current at NOOP, CHECK and IDLE (woken by the mailbox's change signal), and the commands that work on its
 * messages.
 */
import type { FetchEntry, ImapFolder, IndexEntry } from '../../modules/imap-access/imap-access.service.js';
import { fetchData, flagsOf, needsRaw, setsSeen, UnknownCteError } from './fetch-items.js';
import { formatRanges, parseFetchCommand, parseSequenceSet, parseSearchCommand, parseStoreCommand, resolveSequenceSet, inRanges, type Command, type FetchItem, type QresyncParams, type Ranges, type SequenceSet } from './protocol/index.js';
import { matches, searchNeeds } from './search-eval.js';
import type { ImapSession } from './session.js';

/** Messages read per statement while fetching or searching (memory follows the batch, not the folder). */
const BATCH = 100;

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

export class SelectedCommands {
  private entries: IndexEntry[] = [];
  private highestModseq = 0;

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
    const [status, entries] = await Promise.all([this.s.access.status(this.account, this.folder), this.s.access.index(this.account, this.folder)]);
    this.entries = entries;
    this.highestModseq = status.highestmodseq;
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
    w.status('OK', 'Highest.', { name: 'HIGHESTMODSEQ', args: [status.highestmodseq] });
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
      this.entries.push(...added);
      w.untagged(this.entries.length, { atom: 'EXISTS' });
    }
    this.highestModseq = Math.max(this.highestModseq, ...fresh.map((e) => e.modseq));
    this.s.send(w);
  }

  private flagsResponse(seq: number, e: IndexEntry, uid: boolean): void {
    const items: unknown[] = [];
    if (uid || this.s.enabled.has('QRESYNC')) items.push({ atom: 'UID' }, e.uid);
    items.push({ atom: 'FLAGS' }, flagsOf(e).map((atom) => ({ atom })));
    if (this.condstore) items.push({ atom: 'MODSEQ' }, [e.modseq]);
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
      case 'COPY': case 'UID COPY': case 'MOVE': case 'UID MOVE':
        this.s.tagged(cmd.tag, 'NO', 'Not supported yet.', { name: 'CANNOT' });
        return true;
      default:
        return false;
    }
  }

  /** The messages a set names, in message-number order; a ParseError text for a message number past the end. */
  private targets(set: SequenceSet, uid: boolean): Target[] | string {
    const maxUid = this.entries.length > 0 ? this.entries[this.entries.length - 1]!.uid : 0;
    const ranges = resolveSequenceSet(set, uid ? maxUid : this.entries.length, { uid });
    if ('bad' in ranges) return ranges.bad;
    const out: Target[] = [];
    if (uid) this.entries.forEach((entry, i) => inRanges(ranges, entry.uid) && out.push({ seq: i + 1, entry }));
    else for (const [lo, hi] of ranges) for (let n = lo; n <= hi; n++) out.push({ seq: n, entry: this.entries[n - 1]! });
    return out;
  }

  private async fetch(cmd: Command, uid: boolean): Promise<void> {
    const parsed = parseFetchCommand(cmd.args, { uid });
    if ('bad' in parsed) return this.s.tagged(cmd.tag, 'BAD', parsed.bad);
    let targets = this.targets(parsed.set, uid);
    if (typeof targets === 'string') return this.s.tagged(cmd.tag, 'BAD', targets);
    if (parsed.changedSince !== undefined) {
      this.s.enabled.add('CONDSTORE');
      const since = Number(parsed.changedSince);
      targets = targets.filter((t) => t.entry.modseq > since);
    }
    const markSeen = setsSeen(parsed.items) && !this.readOnly;
    let items: FetchItem[] = parsed.items;
    if (markSeen) {
      const unread = targets.filter((t) => !t.entry.read).map((t) => t.entry.uid);
      if (unread.length > 0) await this.s.access.store(this.account, this.folder, toRanges(unread), { mode: 'add', flags: { read: true }, keywords: [] });
      if (unread.length > 0 && !items.some((i) => i.kind === 'FLAGS')) items = [...items, { kind: 'FLAGS' }];
    }
    const modseq = this.condstore && (parsed.changedSince !== undefined || items.some((i) => i.kind === 'MODSEQ'));
    const withRaw = needsRaw(items);
    try {
      for (let i = 0; i < targets.length; i += BATCH) {
        const batch = targets.slice(i, i + BATCH);
        const rows = new Map((await this.s.access.messages(this.account, this.folder, toRanges(batch.map((t) => t.entry.uid)), withRaw)).map((r) => [r.uid, r]));
        for (const t of batch) {
          const row = rows.get(t.entry.uid);
          if (!row) continue;
          this.entries[t.seq - 1] = indexOf(row);
          await this.s.sendBytes(Buffer.concat([Buffer.from(`* ${t.seq} FETCH `), fetchData(row, items, { uid, modseq }), Buffer.from('\r\n')]));
        }
      }
    } catch (err) {
      if (err instanceof UnknownCteError) return this.s.tagged(cmd.tag, 'NO', 'Unknown Content-Transfer-Encoding.', { name: 'UNKNOWN-CTE' });
      throw err;
    }
    this.s.tagged(cmd.tag, 'OK', 'Fetch completed.');
  }

  private async store(cmd: Command, uid: boolean): Promise<void> {
    const parsed = parseStoreCommand(cmd.args);
    if ('bad' in parsed) return this.s.tagged(cmd.tag, 'BAD', parsed.bad);
    if (this.readOnly) return this.s.tagged(cmd.tag, 'NO', 'Mailbox is read-only.', { name: 'READ-ONLY' });
    const targets = this.targets(parsed.set, uid);
    if (typeof targets === 'string') return this.s.tagged(cmd.tag, 'BAD', targets);
    if (parsed.unchangedSince !== undefined) this.s.enabled.add('CONDSTORE');
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
      const rows = await this.s.access.messages(this.account, this.folder, toRanges(uids.slice(i, i + BATCH)), false);
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
    if ('bad' in parsed) return this.s.tagged(cmd.tag, parsed.no ? 'NO' : 'BAD', parsed.bad, parsed.code ? { name: parsed.code.split(' ')[0]!, args: parsed.code.includes('(') ? [parsed.code.slice(parsed.code.indexOf('(') + 1, -1).split(' ').map((atom) => ({ atom }))] : [] } : undefined);
    const needs = searchNeeds(parsed.key);
    const found: number[] = [];
    const maxUid = this.entries.length > 0 ? this.entries[this.entries.length - 1]!.uid : 0;
    const ctx = { count: this.entries.length, maxUid, now: Date.now() };
    for (let i = 0; i < this.entries.length; i += BATCH) {
      const batch = this.entries.slice(i, i + BATCH);
      const rows = needs === 'index' ? new Map<number, FetchEntry>() : new Map((await this.s.access.messages(this.account, this.folder, toRanges(batch.map((e) => e.uid)), needs === 'raw')).map((r) => [r.uid, r]));
      batch.forEach((e, j) => {
        const row = rows.get(e.uid);
        if (needs !== 'index' && !row) return;
        if (matches(parsed.key, { ...e, ...row }, { ...ctx, seq: i + j + 1 })) found.push(uid ? e.uid : i + j + 1);
      });
    }
    if (parsed.return === undefined) {
      this.s.send(this.s.writer.untagged({ atom: 'SEARCH' }, ...found));
    } else {
      const opts = parsed.return.length === 0 ? ['ALL'] : parsed.return;
      const out: unknown[] = [[{ atom: 'TAG' }, cmd.tag]];
      if (uid) out.push({ atom: 'UID' });
      if (found.length > 0 && opts.includes('MIN')) out.push({ atom: 'MIN' }, Math.min(...found));
      if (found.length > 0 && opts.includes('MAX')) out.push({ atom: 'MAX' }, Math.max(...found));
      if (opts.includes('COUNT')) out.push({ atom: 'COUNT' }, found.length);
      if (found.length > 0 && opts.includes('ALL')) out.push({ atom: 'ALL' }, { atom: formatRanges(toRanges(found)) });
      this.s.send(this.s.writer.untagged({ atom: 'ESEARCH' }, ...(out as never[])));
    }
    this.s.tagged(cmd.tag, 'OK', 'Search completed.');
  }

  private async expunge(cmd: Command, uid: boolean): Promise<void> {
    let ranges: Ranges | undefined;
    if (uid) {
      const parsed = parseSequenceSet(cmd.args[0]);
      if ('bad' in parsed || cmd.args.length !== 1) return this.s.tagged(cmd.tag, 'BAD', 'Invalid UID EXPUNGE arguments.');
      const resolved = resolveSequenceSet(parsed, Number.MAX_SAFE_INTEGER, { uid: true });
      if ('bad' in resolved) return this.s.tagged(cmd.tag, 'BAD', resolved.bad);
      ranges = resolved;
    } else if (cmd.args.length > 0) return this.s.tagged(cmd.tag, 'BAD', 'EXPUNGE takes no arguments.');
    if (this.readOnly) return this.s.tagged(cmd.tag, 'NO', 'Mailbox is read-only.', { name: 'READ-ONLY' });
    await this.s.access.expunge(this.account, this.folder, ranges);
    await this.sync(true);
    this.s.tagged(cmd.tag, 'OK', 'Expunge completed.');
  }

  /**
   * While IDLE: look at the folder when the mailbox's change signal rings (committed here or, by NOTIFY, in another
   * process) and every idlePollMs in case a notification was lost, and once before the continuation (a change
   * between the client's last command and the IDLE rang nobody). One look at a time; a signal during a look asks for
   * one more after it. Resolves to the stop, which waits for a look under way (its responses precede the tagged OK).
   */
  private async watch(): Promise<() => Promise<void>> {
    let current: Promise<void> | null = null;
    let again = false;
    let stopped = false;
    const look = (): Promise<void> | null => {
      if (stopped) return null;
      if (current) {
        again = true;
        return current;
      }
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
    const timer = setInterval(ring, this.s.options.idlePollMs);
    await look();
    return async () => {
      stopped = true;
      unsubscribe();
      clearInterval(timer);
      await current;
    };
  }
}

const indexOf = (row: FetchEntry): IndexEntry => ({ uid: row.uid, modseq: row.modseq, read: row.read, flagged: row.flagged, answered: row.answered, deleted: row.deleted, labels: row.labels });

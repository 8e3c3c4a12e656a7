/**
 * Commands of the authenticated state (and the selected one, which includes it): ENABLE, NAMESPACE, LIST/LSUB,
 * STATUS, SELECT/EXAMINE, APPEND, and the mailbox-management commands a fixed set of folders refuses.
 */
import { IMAP_FOLDERS, type ImapFolder } from '../../modules/imap-access/imap-access.service.js';
import { astringText, atomText, encodeMailboxName, isAtom, parseAppendCommand, parseMailboxName, parseSelectCommand, type Command, type Token, type Value } from './protocol/index.js';
import { SelectedCommands } from './selected.js';
import type { ImapSession } from './session.js';

const DELIMITER = '/';

/** A mailbox name as Dovecot writes it: an atom when it can be one, else a string. */
function nameValue(s: ImapSession, name: string): Value {
  const encoded = encodeMailboxName(name, { utf8: s.enabled.has('UTF8=ACCEPT') });
  return isAtom(encoded) ? { atom: encoded } : encoded;
}
/** STATUS items in the order Dovecot writes them, whatever order they were asked in. */
const STATUS_ITEMS = ['MESSAGES', 'RECENT', 'UIDNEXT', 'UIDVALIDITY', 'UNSEEN', 'HIGHESTMODSEQ', 'SIZE', 'DELETED'];

/** True when the command was one of this state's (answered); false to let the caller say BAD. */
export async function authenticatedCommand(s: ImapSession, cmd: Command): Promise<boolean> {
  switch (cmd.name) {
    case 'ENABLE': await enable(s, cmd); return true;
    case 'NAMESPACE':
      s.send(s.writer.untagged({ atom: 'NAMESPACE' }, [['', DELIMITER]], null, null));
      s.tagged(cmd.tag, 'OK', 'Namespace completed.');
      return true;
    case 'LIST': list(s, cmd, 'LIST'); return true;
    case 'LSUB': list(s, cmd, 'LSUB'); return true;
    case 'STATUS': await status(s, cmd); return true;
    case 'SELECT':
    case 'EXAMINE': await select(s, cmd); return true;
    case 'APPEND': await append(s, cmd); return true;
    case 'SUBSCRIBE':
    case 'UNSUBSCRIBE': {
      const f = folderArg(s, cmd.args[0]);
      if (f) s.tagged(cmd.tag, 'OK', `${cmd.name} completed.`);
      else s.tagged(cmd.tag, 'NO', 'Mailbox does not exist.', { name: 'NONEXISTENT' });
      return true;
    }
    case 'CREATE':
      create(s, cmd);
      return true;
    case 'DELETE':
    case 'RENAME':
      s.tagged(cmd.tag, 'NO', 'The folders of a Mailroom mailbox are fixed; use labels (keywords) instead.', { name: 'CANNOT' });
      return true;
    default:
      return false;
  }
}

/**
 * A folder that exists is answered as Dovecot answers it (ALREADYEXISTS, a trailing delimiter ignored), so a client
 * that creates its folder to be sure goes on; any other name is refused, the folders being fixed.
 */
function create(s: ImapSession, cmd: Command): void {
  const name = parseMailboxName(cmd.args[0], { utf8: s.enabled.has('UTF8=ACCEPT') });
  const existing = typeof name === 'string' && cmd.args.length === 1 ? s.access.folder(name.endsWith(DELIMITER) ? name.slice(0, -1) : name) : null;
  if (existing) s.tagged(cmd.tag, 'NO', 'Mailbox already exists.', { name: 'ALREADYEXISTS' });
  else s.tagged(cmd.tag, 'NO', 'The folders of a Mailroom mailbox are fixed; use labels (keywords) instead.', { name: 'CANNOT' });
}

async function enable(s: ImapSession, cmd: Command): Promise<void> {
  const now: string[] = [];
  for (const t of cmd.args) {
    const name = atomText(t)?.toUpperCase();
    if (name === undefined) return s.tagged(cmd.tag, 'BAD', 'Invalid arguments.');
    if (['CONDSTORE', 'QRESYNC', 'UTF8=ACCEPT'].includes(name) && !s.enabled.has(name)) {
      // QRESYNC implies CONDSTORE (RFC 7162).
      if (name === 'CONDSTORE' || name === 'QRESYNC') await s.enableCondstore();
      s.enabled.add(name);
      now.push(name);
    }
  }
  if (s.enabled.has('UTF8=ACCEPT')) s.writer.utf8 = true;
  s.send(s.writer.untagged({ atom: 'ENABLED' }, ...now.map((atom) => ({ atom }))));
  s.tagged(cmd.tag, 'OK', 'Enabled.');
}

function folderArg(s: ImapSession, t: Token | undefined): ImapFolder | null {
  const name = parseMailboxName(t, { utf8: s.enabled.has('UTF8=ACCEPT') });
  return typeof name === 'string' ? s.access.folder(name) : null;
}

/** `*` and `%` as RFC 9051 wildcards (the hierarchy is flat, so both match any name); INBOX in any case. */
function patternMatcher(reference: string, pattern: string): (name: string) => boolean {
  const full = reference + pattern;
  const re = new RegExp(`^${full.split('').map((c) => (c === '*' || c === '%' ? '.*' : c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('')}$`);
  const inbox = new RegExp(re.source, 'i');
  return (name) => re.test(name) || (name === 'INBOX' && inbox.test(name));
}

/** What a LIST answer carries per folder: non-extended LIST says children and special use, LSUB special use only. */
interface ListReturn {
  children: boolean;
  special: boolean;
  subscribed: boolean;
}

/** LIST-EXTENDED selection options (RFC 5258); a BAD text when one is unknown. */
function selectionOptions(first: Token | undefined): { special: boolean; subscribed: boolean } | string {
  const out = { special: false, subscribed: false };
  let recursive = false;
  if (first?.type !== 'list') return out;
  for (const o of first.items) {
    const name = atomText(o)?.toUpperCase();
    if (name === 'SPECIAL-USE') out.special = true;
    else if (name === 'SUBSCRIBED') out.subscribed = true;
    else if (name === 'RECURSIVEMATCH') recursive = true;
    else if (name !== 'REMOTE') return 'Unknown select options.';
  }
  if (recursive && !out.special && !out.subscribed) return 'RECURSIVEMATCH must not be the only selection.';
  return out;
}

/** RETURN options add to what the selection options return; a BAD text when one is unknown. */
function returnOptions(items: Token, ret: ListReturn): string | null {
  if (items.type !== 'list') return 'Invalid LIST arguments.';
  for (const o of items.items) {
    const name = atomText(o)?.toUpperCase();
    if (name === 'CHILDREN') ret.children = true;
    else if (name === 'SPECIAL-USE') ret.special = true;
    else if (name === 'SUBSCRIBED') ret.subscribed = true;
    else return 'Unknown return options.';
  }
  return null;
}

/** Every folder of a mailbox is subscribed (SUBSCRIBE and UNSUBSCRIBE change nothing). */
function folderFlags(f: ImapFolder, ret: ListReturn): Array<{ atom: string }> {
  const flags: Array<{ atom: string }> = [];
  if (ret.subscribed) flags.push({ atom: '\\Subscribed' });
  if (ret.children) flags.push({ atom: '\\HasNoChildren' });
  if (ret.special && f.specialUse) flags.push({ atom: f.specialUse });
  return flags;
}

function list(s: ImapSession, cmd: Command, kind: 'LIST' | 'LSUB'): void {
  const first = cmd.args[0];
  const selection = kind === 'LIST' ? selectionOptions(first) : { special: false, subscribed: false };
  if (typeof selection === 'string') return s.tagged(cmd.tag, 'BAD', selection);
  const i = kind === 'LIST' && first?.type === 'list' ? 1 : 0;
  const reference = astringText(cmd.args[i]);
  const patternToken = cmd.args[i + 1];
  const patterns = patternToken?.type === 'list' ? patternToken.items.map(astringText) : [astringText(patternToken)];
  // As Dovecot answers: any LIST-EXTENDED syntax returns only what was asked for; LSUB returns special use only.
  const extended = i === 1 || patternToken?.type === 'list' || cmd.args.length > i + 2;
  const ret: ListReturn = kind === 'LSUB' ? { children: false, special: true, subscribed: false } : { children: !extended, special: !extended || selection.special, subscribed: selection.subscribed };
  if (cmd.args.length > i + 2) {
    const items = cmd.args[i + 3];
    if (kind !== 'LIST' || atomText(cmd.args[i + 2])?.toUpperCase() !== 'RETURN' || !items || cmd.args.length !== i + 4) return s.tagged(cmd.tag, 'BAD', 'Invalid LIST arguments.');
    const bad = returnOptions(items, ret);
    if (bad) return s.tagged(cmd.tag, 'BAD', bad);
  }
  if (reference === null || patterns.length === 0 || patterns.some((p) => p === null)) return s.tagged(cmd.tag, 'BAD', 'Invalid arguments.');
  // `LIST "" ""`: the hierarchy delimiter and root.
  if (kind === 'LIST' && !extended && patterns[0] === '') {
    s.send(s.writer.untagged({ atom: kind }, [{ atom: '\\Noselect' }], DELIMITER, ''));
    return s.tagged(cmd.tag, 'OK', `${kind} completed.`);
  }
  const matchers = patterns.map((p) => patternMatcher(reference, p!));
  for (const f of IMAP_FOLDERS) {
    if (selection.special && !f.specialUse) continue;
    if (!matchers.some((m) => m(f.name))) continue;
    s.send(s.writer.untagged({ atom: kind }, folderFlags(f, ret), DELIMITER, nameValue(s, f.name)));
  }
  s.tagged(cmd.tag, 'OK', `${kind} completed.`);
}

async function status(s: ImapSession, cmd: Command): Promise<void> {
  const f = folderArg(s, cmd.args[0]);
  const items = cmd.args[1];
  if (items?.type !== 'list' || cmd.args.length !== 2) return s.tagged(cmd.tag, 'BAD', 'Invalid STATUS arguments.');
  const names = items.items.map((t) => atomText(t)?.toUpperCase());
  if (names.length === 0 || names.some((n) => n === undefined || !STATUS_ITEMS.includes(n))) return s.tagged(cmd.tag, 'BAD', 'Invalid STATUS items.');
  if (!f) return s.tagged(cmd.tag, 'NO', 'Mailbox does not exist.', { name: 'NONEXISTENT' });
  // Asking for HIGHESTMODSEQ enables CONDSTORE (RFC 7162 3.1).
  if (names.includes('HIGHESTMODSEQ')) await s.enableCondstore();
  const st = await s.access.status(s.account!, f);
  const needRows = names.includes('SIZE') || names.includes('DELETED');
  const rows = needRows ? await s.access.messages(s.account!, f, [[1, Number.MAX_SAFE_INTEGER]], 'index') : [];
  const values: Record<string, number> = {
    MESSAGES: st.total, UIDNEXT: st.uidnext, UIDVALIDITY: st.uidvalidity, UNSEEN: st.unseen, HIGHESTMODSEQ: st.highestmodseq, RECENT: 0,
    SIZE: rows.reduce((sum, r) => sum + r.size, 0), DELETED: rows.filter((r) => r.deleted).length,
  };
  const out: Array<{ atom: string } | number> = [];
  for (const n of STATUS_ITEMS) if (names.includes(n)) out.push({ atom: n }, values[n]!);
  s.send(s.writer.untagged({ atom: 'STATUS' }, nameValue(s, f.name), out));
  s.tagged(cmd.tag, 'OK', 'Status completed.');
}

async function select(s: ImapSession, cmd: Command): Promise<void> {
  const parsed = parseSelectCommand(cmd.args, { utf8: s.enabled.has('UTF8=ACCEPT') });
  // A SELECT that fails leaves no mailbox selected (RFC 9051), even before its arguments are checked.
  const previous = s.selected;
  s.selected = null;
  s.state = 'authenticated';
  if (previous) s.send(s.writer.status('OK', 'Previous mailbox closed.', { name: 'CLOSED' }));
  if ('bad' in parsed) return s.tagged(cmd.tag, parsed.no ? 'NO' : 'BAD', parsed.bad);
  if (parsed.qresync && !s.enabled.has('QRESYNC')) return s.tagged(cmd.tag, 'BAD', 'QRESYNC is not enabled.');
  const f = s.access.folder(parsed.mailbox);
  if (!f) return s.tagged(cmd.tag, 'NO', 'Mailbox does not exist.', { name: 'NONEXISTENT' });
  if (parsed.condstore) s.enabled.add('CONDSTORE');
  const readOnly = cmd.name === 'EXAMINE';
  const view = new SelectedCommands(s, f, readOnly);
  await view.open(parsed.qresync);
  s.selected = view;
  s.state = 'selected';
  s.tagged(cmd.tag, 'OK', `${cmd.name === 'EXAMINE' ? 'Examine' : 'Select'} completed.`, { name: readOnly ? 'READ-ONLY' : 'READ-WRITE' });
}

/**
 * APPEND (RFC 9051) answered with APPENDUID (RFC 4315); into Drafts it makes a draft (the drafts API's). A folder that is
 * not one of the six is TRYCREATE, which no CREATE can satisfy. A message already in Sent by its Message-ID is
 * answered with the copy stored there.
 */
async function append(s: ImapSession, cmd: Command): Promise<void> {
  const parsed = parseAppendCommand(cmd.args, { utf8: s.enabled.has('UTF8=ACCEPT') });
  if ('bad' in parsed) return s.tagged(cmd.tag, parsed.no ? 'NO' : 'BAD', parsed.bad);
  const f = s.access.folder(parsed.mailbox);
  if (!f) return s.tagged(cmd.tag, 'NO', 'Mailbox does not exist.', { name: 'TRYCREATE' });
  if (parsed.message.length === 0) return s.tagged(cmd.tag, 'NO', 'Cannot store an empty message.');
  const result = await s.access.append(s.account!, f, { raw: parsed.message, flags: parsed.flags, date: parsed.date?.date.getTime() });
  if (!result.ok) return s.tagged(cmd.tag, 'NO', 'The workspace is at its storage quota.', { name: 'OVERQUOTA' });
  // The selected folder's new message is announced now (EXISTS), as Dovecot does.
  const view = s.selected;
  if (view && view.folder === f) await view.sync(false);
  s.tagged(cmd.tag, 'OK', 'Append completed.', { name: 'APPENDUID', args: [result.uidvalidity, result.uid] });
}

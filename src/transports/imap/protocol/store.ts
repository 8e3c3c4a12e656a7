/**
 * STORE (and UID STORE): `set [(UNCHANGEDSINCE n)] [+|-]FLAGS[.SILENT] (flags)`. The flags may also come without
 * parentheses (`FLAGS \Seen \Draft`), which RFC 3501 allows and old clients send.
 */
import { parseFlagList, parseFlags } from './flags.js';
import { parseSequenceSet, type SequenceSet } from './sequence.js';
import { number64Of, type ParseError, type Token } from './token.js';

export interface StoreCommand {
  set: SequenceSet;
  /** CONDSTORE: change only messages whose mod-sequence is at most this. */
  unchangedSince?: bigint;
  op: 'set' | 'add' | 'remove';
  silent: boolean;
  flags: string[];
}

const ITEM = /^([+-]?)FLAGS(\.SILENT)?$/;

export function parseStoreCommand(args: readonly Token[]): StoreCommand | ParseError {
  const set = parseSequenceSet(args[0]);
  if ('bad' in set) return set;
  let i = 1;
  let unchangedSince: bigint | undefined;
  const mods = args[i];
  if (mods?.type === 'list') {
    const name = mods.items[0];
    const v = number64Of(mods.items[1]);
    if (mods.items.length !== 2 || name?.type !== 'atom' || name.value.toUpperCase() !== 'UNCHANGEDSINCE' || v === null) {
      return { bad: 'Invalid STORE modifiers.' };
    }
    unchangedSince = v;
    i++;
  }
  const item = args[i];
  const m = item?.type === 'atom' ? ITEM.exec(item.value.toUpperCase()) : null;
  if (!m) return { bad: 'Invalid STORE data item.' };
  const rest = args.slice(i + 1);
  if (rest.length === 0) return { bad: 'Missing flags.' };
  const flags = rest.length === 1 && rest[0]!.type === 'list' ? parseFlagList(rest[0]) : parseFlags(rest);
  if ('bad' in flags) return flags;
  const cmd: StoreCommand = { set, op: m[1] === '+' ? 'add' : m[1] === '-' ? 'remove' : 'set', silent: m[2] !== undefined, flags };
  if (unchangedSince !== undefined) cmd.unchangedSince = unchangedSince;
  return cmd;
}

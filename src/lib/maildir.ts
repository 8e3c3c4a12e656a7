/**
 * Reading a Maildir (one file per message in `cur/` and `new/`; `tmp/` holds deliveries under way and is skipped)
 * with its Maildir++ subfolders (`.Sent`, `.Archive`, `.Lists.work`, … beside `cur/`). A message's flags are the
 * letters after `:2,` in its file name (`S` seen, `F` flagged, `T` trashed, `R` replied, `D` draft); its mtime is,
 * by convention, when it was delivered. Directories are read as streams, never listed whole.
 */
import { existsSync, statSync } from 'node:fs';
import { opendir, stat } from 'node:fs/promises';
import { join } from 'node:path';

export interface MaildirEntry {
  /** The Maildir++ folder name without its leading dot (`Sent`, `Lists.work`), or null for the top (the inbox). */
  folder: string | null;
  path: string;
  /** The flag letters of the file name (`:2,FS` → `FS`); empty for none. */
  flags: string;
  /** Whether the file is still in `new/` (never seen by a mail client). */
  isNew: boolean;
  size: number;
  mtimeMs: number;
}

const isDirectory = (path: string): boolean => existsSync(path) && statSync(path).isDirectory();

/** Whether `dir` is a Maildir: it has a `cur` or a `new` directory. */
export function isMaildir(dir: string): boolean {
  return isDirectory(join(dir, 'cur')) || isDirectory(join(dir, 'new'));
}

/** The flags of a Maildir file name: the letters after `:2,` (`!2,` or `;2,` where `:` cannot be used). */
export function maildirFlags(name: string): string {
  const m = /[:!;]2,([A-Za-z]*)$/.exec(name);
  return m ? m[1]!.toUpperCase() : '';
}

/** The Maildir++ subfolders of a Maildir (directories named `.Name` that are Maildirs), in name order. */
async function subfolders(root: string): Promise<string[]> {
  const names: string[] = [];
  const dir = await opendir(root);
  for await (const entry of dir) {
    if (entry.isDirectory() && entry.name.startsWith('.') && entry.name !== '.' && entry.name !== '..' && isMaildir(join(root, entry.name))) names.push(entry.name);
  }
  return names.sort();
}

async function* folderEntries(root: string, folder: string | null): AsyncGenerator<MaildirEntry> {
  const base = folder === null ? root : join(root, `.${folder}`);
  for (const sub of ['cur', 'new'] as const) {
    const dir = join(base, sub);
    if (!isDirectory(dir)) continue;
    for await (const entry of await opendir(dir)) {
      if (!entry.isFile() || entry.name.startsWith('.')) continue;
      const path = join(dir, entry.name);
      const info = await stat(path);
      yield { folder, path, flags: sub === 'new' ? '' : maildirFlags(entry.name), isNew: sub === 'new', size: info.size, mtimeMs: info.mtimeMs };
    }
  }
}

/** Every message file of a Maildir and its subfolders: the top first, then each subfolder. */
export async function* walkMaildir(root: string): AsyncGenerator<MaildirEntry> {
  yield* folderEntries(root, null);
  for (const name of await subfolders(root)) yield* folderEntries(root, name.slice(1));
}

/** How many message files a Maildir holds (for a progress bar): a pass over the directories, no file opened. */
export async function countMaildir(root: string): Promise<number> {
  let n = 0;
  for (const folder of [null, ...(await subfolders(root)).map((name) => name.slice(1))]) {
    const base = folder === null ? root : join(root, `.${folder}`);
    for (const sub of ['cur', 'new']) {
      const dir = join(base, sub);
      if (!isDirectory(dir)) continue;
      for await (const entry of await opendir(dir)) if (entry.isFile() && !entry.name.startsWith('.')) n++;
    }
  }
  return n;
}

import type { Command } from 'commander';
import { resolve } from 'node:path';
import type { Config } from '../../config/config.js';
import type { Folder } from '../../modules/messages/message.types.js';
import type { TransferProgress } from '../../modules/messages/mailbox-transfer.service.js';
import type { SecretKeySource } from '../../modules/secrets/secret-key.js';
import { invalid } from '../../lib/errors.js';
import { failWith, printResult } from '../output.js';
import { withServices } from './with-services.js';

interface JsonFlag {
  json?: boolean;
}

const OPERATIONS_DOC = 'docs/operations.md, "Backups and restore"';

/** The SQLite file of the configuration; on PostgreSQL (or in memory) the command is refused, pointing at the docs. */
function sqliteFileOf(config: Readonly<Config>, command: 'backup' | 'restore'): string {
  if (!config.databaseUrl.startsWith('sqlite:')) {
    const how = command === 'backup' ? 'back it up with pg_dump -Fc (small installations) or a base backup with WAL archiving (pgBackRest)' : 'restore it with pg_restore or your base backup tool';
    throw invalid('not_sqlite', `mailroom admin ${command} works on a SQLite database, and this one is PostgreSQL: ${how}, as ${OPERATIONS_DOC} describes`);
  }
  const file = config.databaseUrl.slice('sqlite:'.length);
  if (file === ':memory:') throw invalid('not_sqlite', `an in-memory database has nothing to ${command}`);
  return resolve(file);
}

/** What must be kept with a backup besides the database itself, one line each. */
function alsoKeep(config: Readonly<Config>, key: SecretKeySource): string[] {
  const lines: string[] = [];
  if (key.kind === 'file') lines.push(`the secret key file ${key.path} (the database's secrets open only with it)`);
  if (key.kind === 'environment') lines.push("the value of MAILROOM_SECRET_KEY (the database's secrets open only with it)");
  if (config.dkimKeyFile) lines.push(`the DKIM key file ${config.dkimKeyFile} (MAILROOM_DKIM_KEY)`);
  if (config.smtpTlsKeyFile && config.smtpTlsCertFile) lines.push(`the SMTP TLS key and certificate ${config.smtpTlsKeyFile}, ${config.smtpTlsCertFile} (or issue new ones)`);
  if (config.tlsKeyFile && config.tlsCertFile) lines.push(`the TLS key and certificate ${config.tlsKeyFile}, ${config.tlsCertFile} (or issue new ones)`);
  return lines;
}

const megabytes = (bytes: number): string => `${(bytes / (1024 * 1024)).toFixed(1)} MB`;

/** A progress line on stderr, only when stderr is a terminal; warnings go above it. */
function progressLine(verb: string): { update: (p: TransferProgress) => void; warn: (text: string) => void; done: () => void } {
  const tty = process.stderr.isTTY === true;
  let shown = false;
  let last = 0;
  const clear = () => {
    if (shown) process.stderr.write('\r\x1b[2K');
    shown = false;
  };
  return {
    update: (p) => {
      const now = Date.now();
      if (!tty || now - last < 100) return;
      last = now;
      const fraction = p.totalBytes ? p.bytes / p.totalBytes : p.totalMessages ? p.messages / p.totalMessages : null;
      const bar = fraction === null ? '' : `[${'#'.repeat(Math.round(Math.min(1, fraction) * 30)).padEnd(30, '.')}] ${Math.floor(Math.min(1, fraction) * 100)}% `;
      process.stderr.write(`\r\x1b[2K${verb} ${bar}${p.messages} messages, ${megabytes(p.bytes)}`);
      shown = true;
    },
    warn: (text) => {
      clear();
      process.stderr.write(`mailroom: warning: ${text}\n`);
    },
    done: clear,
  };
}

function registerBackupCommands(admin: Command): void {
  admin
    .command('backup')
    .argument('<path>', 'the backup file to write (must not exist)')
    .description('a consistent copy of the SQLite database while the service runs (PostgreSQL: see docs/operations.md)')
    .option('--json', 'print the result as JSON')
    .addHelpText('after', '\nExample:\n  $ mailroom admin backup /var/backups/mailroom-$(date +%F).db')
    .action(async (path: string, opts: JsonFlag) => {
      try {
        const [{ loadConfig }, { backupSqliteDatabase }, { secretKeySource }] = await Promise.all([
          import('../../config/config.js'),
          import('../../db/sqlite-backup.js'),
          import('../../modules/secrets/secret-key.js'),
        ]);
        const config = loadConfig();
        const result = await backupSqliteDatabase(sqliteFileOf(config, 'backup'), resolve(path));
        const keep = alsoKeep(config, secretKeySource(config));
        printResult({ ...result, keep }, opts.json === true, [
          `backup     ${result.path} (${megabytes(result.bytes)}, last migration ${result.migration ?? 'none'})`,
          ...(keep.length > 0 ? ['', 'Keep with it, apart from the backup file:', ...keep.map((line) => `  - ${line}`)] : []),
        ]);
      } catch (err) {
        failWith(err);
      }
    });

  admin
    .command('restore')
    .argument('<path>', 'the backup file to bring in')
    .description('replace the stopped service\'s SQLite database by a backup (migrated forward if older)')
    .option('--json', 'print the result as JSON')
    .addHelpText('after', '\nStop every service on the database first; the database in place is moved aside, not deleted.\n\nExample:\n  $ mailroom admin restore /var/backups/mailroom-2026-12-01.db')
    .action(async (path: string, opts: JsonFlag) => {
      try {
        const [{ loadConfig }, { restoreSqliteDatabase }, { checkKeyForRestore }, { createSecretKeyStore }] = await Promise.all([
          import('../../config/config.js'),
          import('../../db/sqlite-backup.js'),
          import('../../modules/secrets/secret-key.js'),
          import('../../modules/secrets/secret-key.store.js'),
        ]);
        const config = loadConfig();
        const store = createSecretKeyStore();
        const result = await restoreSqliteDatabase(resolve(path), sqliteFileOf(config, 'restore'), (work) => checkKeyForRestore(config, work, store));
        printResult({ ...result }, opts.json === true, [
          `restored   ${resolve(path)} → ${result.path}`,
          ...(result.migrated.length > 0 ? [`migrated   ${result.migrated.length} migration(s), up to ${result.migrated[result.migrated.length - 1]}`] : []),
          ...(result.previous ? [`previous   the database that was there is now ${result.previous}`] : []),
          '',
          'Start the service again.',
        ]);
      } catch (err) {
        failWith(err);
      }
    });
}

function registerMailboxTransferCommands(admin: Command): void {
  admin
    .command('export-mailbox')
    .argument('<address>', 'the mailbox')
    .argument('<file>', 'a new directory: one mboxrd file per folder (inbox, archive, sent, spam, trash)')
    .description("a mailbox's mail as mbox files, the stored bytes exactly")
    .option('--workspace <id>', 'the workspace the mailbox must be in (ws_…)')
    .option('--json', 'print the summary as JSON')
    .addHelpText('after', '\nExample:\n  $ mailroom admin export-mailbox support@example.com ./support-mail\n  $ mutt -f ./support-mail/inbox')
    .action(async (address: string, file: string, opts: { workspace?: string } & JsonFlag) => {
      const progress = progressLine('exporting');
      try {
        const result = await withServices((s) => s.mailTransfer.exportMailbox({ address, workspaceId: opts.workspace ?? null }, resolve(file), progress.update));
        progress.done();
        printResult({ ...result }, opts.json === true, [
          `exported   ${result.messages} messages (${megabytes(result.bytes)}) of ${result.address} to ${result.directory}`,
          ...result.folders.map((f) => `  ${f.folder.padEnd(8)} ${String(f.messages).padStart(7)}  ${f.file}`),
        ]);
      } catch (err) {
        progress.done();
        failWith(err);
      }
    });

  admin
    .command('import-mailbox')
    .argument('<address>', 'the mailbox to import into')
    .argument('<path>', 'an mbox file, a directory of mbox files (one per folder), or a Maildir')
    .description('import mail from mbox or Maildir, keeping folders, read state and dates; a second run imports nothing twice')
    .option('--workspace <id>', 'the workspace the mailbox must be in (ws_…)')
    .option('--format <format>', 'mbox quoting: mboxrd (undo >From quoting) or mboxo (keep it)', 'mboxrd')
    .option('--folder <folder>', 'the folder of a single mbox file: inbox, archive, sent, spam or trash')
    .option('--json', 'print the summary as JSON')
    .addHelpText('after', '\nExamples:\n  $ mailroom admin import-mailbox support@example.com ~/Maildir\n  $ mailroom admin import-mailbox support@example.com old.mbox --folder archive')
    .action(async (address: string, path: string, opts: { workspace?: string; format: string; folder?: string } & JsonFlag) => {
      const progress = progressLine('importing');
      try {
        if (opts.format !== 'mboxrd' && opts.format !== 'mboxo') throw invalid('invalid_format', '--format must be mboxrd or mboxo');
        const format = opts.format;
        const result = await withServices(async (s) => {
          const { parseFolder } = await import('../../modules/messages/message.service.js');
          const folder: Folder | undefined = opts.folder === undefined ? undefined : parseFolder(opts.folder);
          return s.mailTransfer.importMailbox({ address, workspaceId: opts.workspace ?? null }, resolve(path), { format, folder, onProgress: progress.update, onWarning: progress.warn });
        });
        progress.done();
        const folders = Object.entries(result.folders).map(([name, n]) => `${name} ${n}`).join(', ');
        printResult({ ...result }, opts.json === true, [
          `imported   ${result.imported}${folders ? ` (${folders})` : ''} into ${result.address}`,
          `duplicates ${result.duplicates} (already in the mailbox: skipped)`,
          `refused    ${result.refused}${result.refused > 0 ? ' (over the size limit, or empty)' : ''}`,
          ...(result.flags_ignored > 0 ? [`note       ${result.flags_ignored} message(s) had flags Mailroom does not keep (flagged, answered, draft): imported without them`] : []),
        ]);
      } catch (err) {
        progress.done();
        failWith(err);
      }
    });
}

/** The operator's backups, restores, and mailbox exports and imports. */
export function registerTransferCommands(admin: Command): void {
  registerBackupCommands(admin);
  registerMailboxTransferCommands(admin);
}

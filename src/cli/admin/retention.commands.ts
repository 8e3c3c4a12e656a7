import type { Command } from 'commander';
import { failWith, printResult } from '../output.js';
import { withServices } from './with-services.js';

const mib = (pages: number, pageSize: number) => `${((pages * pageSize) / 1024 / 1024).toFixed(1)} MiB`;

/** Operator commands of retention: a sweep now, and the one-time rebuild of an older SQLite file. */
export function registerRetentionCommands(admin: Command): void {
  admin
    .command('sweep')
    .description('delete now what is past its retention period (the worker role does this every MAILROOM_RETENTION_INTERVAL_MS)')
    .option('--json', 'print the counts as JSON')
    .addHelpText('after', '\nExample:\n  $ mailroom admin sweep')
    .action(async (opts: { json?: boolean }) => {
      try {
        const report = await withServices((s) => s.retention.sweep.sweep());
        printResult({ ...report }, opts.json === true, [
          `messages          ${report.messages}`,
          `events            ${report.events}`,
          `webhook attempts  ${report.webhookAttempts}`,
          `dead jobs         ${report.deadJobs}`,
          `idempotency keys  ${report.idempotencyKeys}`,
          `expunged uids     ${report.expunged}`,
          `pages given back  ${report.pagesFreed}`,
          `batches           ${report.batches} (longest ${report.longestBatchMs.toFixed(0)} ms; of messages ${report.longestMessageBatchMs.toFixed(0)} ms)`,
        ]);
      } catch (err) {
        failWith(err);
      }
    });

  admin
    .command('vacuum')
    .description('SQLite: rebuild the database file so it shrinks and later sweeps give freed space back (stop the service first)')
    .option('--json', 'print the sizes as JSON')
    .addHelpText('after', '\nIt holds the write lock throughout and needs free disk space for a copy of the file.\nExample:\n  $ mailroom admin vacuum')
    .action(async (opts: { json?: boolean }) => {
      try {
        const result = await withServices((s) => s.retention.sweep.vacuum());
        if (!result) {
          printResult({ ok: true, rebuilt: false }, opts.json === true, [
            'PostgreSQL: nothing to rebuild. Autovacuum makes deleted rows\' space reusable; to shrink the files,',
            'run VACUUM FULL (locks each table while it runs) or pg_repack (online) on the largest tables.',
          ]);
          return;
        }
        const { before, after } = result;
        printResult({ ok: true, rebuilt: true, before, after }, opts.json === true, [
          `before  ${mib(before.pageCount, before.pageSize)} (${mib(before.freePages, before.pageSize)} free)`,
          `after   ${mib(after.pageCount, after.pageSize)}; incremental vacuum ${after.autoVacuum === 2 ? 'on' : 'off'}`,
        ]);
      } catch (err) {
        failWith(err);
      }
    });
}

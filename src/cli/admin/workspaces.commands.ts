import type { Command } from 'commander';
import { createInterface } from 'node:readline';
import type { DeleteOutcome, PurgeProgress, WorkspaceListing } from '../../modules/tenancy/workspace-lifecycle.service.js';
import { failWith, printResult } from '../output.js';
import { withServices } from './with-services.js';

interface JsonFlag {
  json?: boolean;
}

/** A count for people: 1234567 → 1.2 MB for bytes. */
function bytes(n: number): string {
  const units = ['B', 'kB', 'MB', 'GB', 'TB'];
  let value = n;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit += 1;
  }
  return unit === 0 ? `${n} B` : `${value.toFixed(1)} ${units[unit]}`;
}

function listingLines(workspaces: readonly WorkspaceListing[]): string[] {
  if (workspaces.length === 0) return ['no workspaces'];
  const header = ['WORKSPACE', 'STATE', 'MAILBOXES', 'MESSAGES', 'STORED', 'SENT/24H', 'CREATED', 'NAME'];
  const rows = workspaces.map((w) => [
    w.workspace_id,
    w.state,
    String(w.usage.mailboxes),
    String(w.usage.messages),
    bytes(w.usage.stored_bytes),
    String(w.usage.sent_last_day),
    w.created_at.slice(0, 10),
    w.state_reason ? `${w.name} (${w.state_reason})` : w.name,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  return [header, ...rows].map((cells) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('  '));
}

/** Ask on the terminal for the workspace id again; anything else (or no terminal) refuses. */
async function confirmDeletion(workspaceId: string): Promise<void> {
  if (!process.stdin.isTTY) throw new Error(`refusing to delete ${workspaceId} without --yes (no terminal to ask)`);
  const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: true });
  try {
    const answer = await new Promise<string>((resolve) => rl.question(`Delete workspace ${workspaceId} and everything it holds? Type its id to confirm: `, resolve));
    if (answer.trim() !== workspaceId) throw new Error('not confirmed; nothing was deleted');
  } finally {
    rl.close();
  }
}

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new Error(`not a whole number: ${value}`);
  return n;
}

function deletionLines(outcome: DeleteOutcome): string[] {
  const counts = Object.entries(outcome.deleted).filter(([, n]) => n > 0).map(([step, n]) => `  ${step.padEnd(14)} ${n}`);
  const head = outcome.finished
    ? `workspace ${outcome.workspace_id} deleted (${outcome.batches} batches)`
    : `stopped after ${outcome.batches} batches: workspace ${outcome.workspace_id} is still being deleted; run the command again to finish`;
  return [head, ...(counts.length > 0 ? ['rows deleted in this run:', ...counts] : [])];
}

/** `mailroom admin list-workspaces | suspend | resume | delete-workspace`: the operator's controls of whole workspaces. */
export function registerWorkspacesCommands(admin: Command): void {
  admin
    .command('list-workspaces')
    .description('every workspace with its state and usage (mailboxes, messages, stored bytes, sent in the last day)')
    .option('--json', 'print {"workspaces":[…]}')
    .addHelpText('after', '\nExample:\n  $ mailroom admin list-workspaces --json')
    .action(async (opts: JsonFlag) => {
      try {
        const result = await withServices((s) => s.workspaceLifecycle.list());
        printResult(result, opts.json === true, listingLines(result.workspaces));
      } catch (err) {
        failWith(err);
      }
    });

  admin
    .command('suspend')
    .description("suspend a workspace: its sends, logins and API calls answer 403 workspace_suspended, its queued deliveries and webhooks wait; inbound mail is still stored")
    .argument('<workspace>', 'workspace id (ws_…)')
    .option('--reason <text>', 'why, shown to its users in every refusal')
    .option('--json', 'print JSON')
    .addHelpText('after', '\nExample:\n  $ mailroom admin suspend ws_01j… --reason "unpaid invoice"')
    .action(async (workspace: string, opts: { reason?: string } & JsonFlag) => {
      try {
        const result = await withServices((s) => s.workspaceLifecycle.suspend(workspace, opts.reason));
        printResult(result, opts.json === true, [`workspace ${workspace} ${result.changed ? 'suspended' : 'was suspended already'}${result.reason ? ` (${result.reason})` : ''}`]);
      } catch (err) {
        failWith(err);
      }
    });

  admin
    .command('resume')
    .description('end a suspension: the workspace works again and its held deliveries and webhooks go out')
    .argument('<workspace>', 'workspace id (ws_…)')
    .option('--json', 'print JSON')
    .addHelpText('after', '\nExample:\n  $ mailroom admin resume ws_01j…')
    .action(async (workspace: string, opts: JsonFlag) => {
      try {
        const result = await withServices((s) => s.workspaceLifecycle.resume(workspace));
        printResult(result, opts.json === true, [`workspace ${workspace} ${result.changed ? 'resumed' : 'was not suspended'}`]);
      } catch (err) {
        failWith(err);
      }
    });

  admin
    .command('delete-workspace')
    .description('delete a workspace and everything it holds, in batches; run it again to finish a deletion that was interrupted')
    .argument('<workspace>', 'workspace id (ws_…)')
    .option('--yes', 'do not ask for confirmation')
    .option('--batch-size <rows>', 'rows deleted per statement (default 500)', positiveInt)
    .option('--max-batches <n>', 'stop after this many batches (the rest waits for the next run)', positiveInt)
    .option('--json', 'print the outcome as JSON (progress still goes to stderr)')
    .addHelpText('after', '\nExample:\n  $ mailroom admin delete-workspace ws_01j… --yes')
    .action(async (workspace: string, opts: { yes?: boolean; batchSize?: number; maxBatches?: number } & JsonFlag) => {
      try {
        if (opts.yes !== true) await confirmDeletion(workspace);
        const onProgress = (p: PurgeProgress) => process.stderr.write(`${p.step}: ${p.stepTotal} rows deleted (batch ${p.batches})\n`);
        const outcome = await withServices((s) => s.workspaceLifecycle.delete(workspace, { batchSize: opts.batchSize, maxBatches: opts.maxBatches, onProgress }));
        printResult({ ...outcome }, opts.json === true, deletionLines(outcome));
      } catch (err) {
        failWith(err);
      }
    });
}

import type { Command } from 'commander';
import type { QuotaName, QuotaShow, Usage } from '../../modules/quotas/quota.types.js';
import { failWith, printResult } from '../output.js';
import { withServices } from './with-services.js';

/** The usage each quota is checked against (api_requests_per_minute counts a minute nobody keeps). */
const USAGE_OF: Record<QuotaName, keyof Usage | null> = {
  mailboxes: 'mailboxes',
  stored_bytes: 'stored_bytes',
  sent_per_hour: 'sent_last_hour',
  sent_per_day: 'sent_last_day',
  api_requests_per_minute: null,
};
/** The quotas in the service's order (the CLI loads no server module, so it lists them from the record above). */
const QUOTA_NAMES = Object.keys(USAGE_OF) as QuotaName[];

/** `quota show` for a person: one line per quota, its usage, its limit and where the limit comes from. */
function quotaLines(shown: QuotaShow): string[] {
  const width = Math.max(...QUOTA_NAMES.map((n) => n.length)) + 2;
  const lines = [`workspace  ${shown.workspace_id}`, '', `${'quota'.padEnd(width)}${'usage'.padEnd(14)}limit`];
  for (const name of QUOTA_NAMES) {
    const used = USAGE_OF[name];
    const limit = shown.quotas[name];
    const source = shown.sources[name] === 'default' ? ' (default)' : '';
    lines.push(`${name.padEnd(width)}${(used === null ? '-' : String(shown.usage[used])).padEnd(14)}${limit === null ? 'unlimited' : String(limit)}${source}`);
  }
  return lines;
}

/** `mailroom admin quota show|set`: a workspace's usage and quotas, and the operator's settings of them. */
export function registerQuotaCommands(admin: Command): void {
  const quota = admin
    .command('quota')
    .description(`quotas per workspace (${QUOTA_NAMES.join(', ')}): show usage and limits, set one`)
    .addHelpText('after', '\nExamples:\n  $ mailroom admin quota show ws_01j…\n  $ mailroom admin quota set ws_01j… sent_per_hour 500\n  $ mailroom admin quota set ws_01j… stored_bytes default');

  quota
    .command('show')
    .description('usage beside the quotas in force, and whether each is the workspace\'s own or the default')
    .argument('<workspace>', 'workspace id (ws_…)')
    .option('--json', 'print {"workspace_id","usage","quotas","sources"} (null = unlimited)')
    .addHelpText('after', '\nExample:\n  $ mailroom admin quota show ws_01j… --json')
    .action(async (workspace: string, opts: { json?: boolean }) => {
      try {
        const shown = await withServices((s) => s.quotas.show(workspace));
        printResult({ ...shown }, opts.json === true, quotaLines(shown));
      } catch (err) {
        failWith(err);
      }
    });

  quota
    .command('set')
    .description('set a quota of a workspace: a whole number, unlimited, or default (the MAILROOM_QUOTA_* value again)')
    .argument('<workspace>', 'workspace id (ws_…)')
    .argument('<name>', QUOTA_NAMES.join(', '))
    .argument('<value>', 'a whole number (bytes for stored_bytes), unlimited, or default')
    .option('--json', 'print the workspace\'s usage and quotas after the change')
    .addHelpText('after', '\nExamples:\n  $ mailroom admin quota set ws_01j… sent_per_day 10000\n  $ mailroom admin quota set ws_01j… mailboxes unlimited')
    .action(async (workspace: string, name: string, value: string, opts: { json?: boolean }) => {
      try {
        const shown = await withServices((s) => s.quotas.set(workspace, name, value));
        printResult({ ...shown }, opts.json === true, quotaLines(shown));
      } catch (err) {
        failWith(err);
      }
    });
}

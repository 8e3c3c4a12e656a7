import type { Command } from 'commander';
import type { Schema } from './api.types.js';
import { leaf, run, type Context } from './context.js';
import { relativeTime, renderTable } from './format.js';
import { integer } from './options.js';

type Entry = Schema<'AuditEntry'>;

/** `usr_… (ada@example.com)`, `key_…`, `operator`. */
export function actorText(actor: Entry['actor']): string {
  if (actor.email) return actor.email;
  return actor.id ?? actor.kind;
}

/** The details as `key=value` pairs on one line (objects as JSON). */
export function detailsText(details: Entry['details']): string {
  return Object.entries(details)
    .filter(([, value]) => value !== null && value !== undefined)
    .map(([key, value]) => `${key}=${typeof value === 'string' ? (/\s/.test(value) ? JSON.stringify(value) : value) : JSON.stringify(value)}`)
    .join(' ');
}

function auditTable(ctx: Context, entries: readonly Entry[]): string[] {
  return renderTable(
    entries,
    [
      { header: 'WHEN', value: (e) => relativeTime(e.created_at), style: (s) => ctx.style.dim(s) },
      { header: 'ACTION', value: (e) => e.action, style: (s) => ctx.style.bold(s) },
      { header: 'ACTOR', value: (e) => actorText(e.actor), max: 40 },
      { header: 'IP', value: (e) => e.ip ?? '-' },
      { header: 'TARGET', value: (e) => (e.target ? `${e.target.kind} ${e.target.id}` : '-'), max: 50 },
      { header: 'DETAILS', value: (e) => detailsText(e.details), max: 80 },
    ],
    ctx.style,
  );
}

export function registerAuditCommands(program: Command): void {
  leaf(program, {
    name: 'audit-log',
    description: 'who changed what in the workspace, newest first (owner or admin)',
    examples: ['mailroom audit-log', 'mailroom audit-log --action webhook. --limit 20', 'mailroom audit-log --actor ada@example.com --json'],
  })
    .option('--action <name>', 'one action (member.added) or a family (webhook.)')
    .option('--actor <who>', "an actor id (usr_…, key_…), a kind (operator, system) or a user's email")
    .option('--limit <n>', 'how many to show (1–200, default 50)', integer)
    .option('--before <audit_id>', 'older than this entry (the next page)')
    .action(
      run<{ action?: string; actor?: string; limit?: number; before?: string }>(async (ctx, _args, options) => {
        const page = await ctx.api().get('/app/api/audit-log', { query: { action: options.action, actor: options.actor, limit: options.limit, before: options.before } });
        ctx.show(page, () => [
          ...(page.entries.length === 0 ? ['no audit entries'] : auditTable(ctx, page.entries)),
          ...(page.next_before ? [ctx.style.dim(`older entries: mailroom audit-log --before ${page.next_before}`)] : []),
        ]);
      }),
    );
}

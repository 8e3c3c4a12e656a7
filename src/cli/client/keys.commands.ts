import type { Command } from 'commander';
import { group, leaf, run } from './context.js';
import { relativeTime, renderTable } from './format.js';

export function registerKeyCommands(program: Command): void {
  const keys = group(program, 'keys', 'API keys of the workspace, for the API-key surface (owner or admin)', [
    'mailroom keys create --name "CI deploys"',
    'mailroom keys revoke key_01m7yk3v0d8n2q3bz4xg5c6h7j',
  ]).alias('api-keys');

  leaf(keys, { name: 'list', isDefault: true, description: 'the API keys of the workspace, revoked ones too (never the keys)', examples: ['mailroom keys list', 'mailroom keys --json'] }).action(
    run(async (ctx) => {
      const answer = await ctx.api().get('/app/api/api-keys');
      ctx.show(answer, () =>
        answer.api_keys.length === 0
          ? ['no API keys yet: mailroom keys create --name <name>']
          : renderTable(
              answer.api_keys,
              [
                { header: 'ID', value: (k) => k.key_id },
                { header: 'NAME', value: (k) => k.name, max: 30 },
                { header: 'CREATED', value: (k) => relativeTime(k.created_at), style: (s) => ctx.style.dim(s) },
                { header: 'LAST USED', value: (k) => (k.last_used_at ? relativeTime(k.last_used_at) : 'never'), style: (s) => ctx.style.dim(s) },
                { header: 'STATE', value: (k) => (k.revoked_at ? `revoked ${relativeTime(k.revoked_at)}` : 'active'), style: (s, k) => (k.revoked_at ? ctx.style.red(s) : ctx.style.green(s)) },
              ],
              ctx.style,
            ),
      );
    }),
  );

  leaf(keys, { name: 'create', description: 'create a workspace API key; the key is printed this once', examples: ['mailroom keys create --name "CI deploys"', 'mailroom keys create --json'] })
    .option('--name <name>', 'what it is for (up to 100 characters)')
    .action(
      run<{ name?: string }>(async (ctx, _args, options) => {
        const key = await ctx.api().post('/app/api/api-keys', { body: { name: options.name } });
        ctx.show(key, () => [
          `created ${key.key_id}${key.name ? ` (${key.name})` : ''}`,
          '',
          `  ${ctx.style.bold(key.api_key)}`,
          '',
          'This is the only time the key is shown: store it now. Send it as Authorization: Bearer <key>',
          'to the API-key surface (/mailboxes, /inbox, /messages, /send …); it acts in this workspace.',
        ]);
      }),
    );

  leaf(keys, { name: 'revoke <key_id>', alias: 'delete', description: 'revoke a key at once', examples: ['mailroom keys revoke key_01m7yk3v0d8n2q3bz4xg5c6h7j'] }).action(
    run(async (ctx, [id = '']) => {
      const key = await ctx.api().delete('/app/api/api-keys/{key_id}', { path: { key_id: id } });
      ctx.show(key, () => [`revoked ${key.key_id}`]);
    }),
  );
}

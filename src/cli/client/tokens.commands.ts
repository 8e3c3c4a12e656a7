import type { Command } from 'commander';
import { given, type Schema } from './api.types.js';
import { group, leaf, run, type Context } from './context.js';
import { relativeTime, renderTable } from './format.js';
import { domainId } from './domains.commands.js';

type Scope = Schema<'ServiceToken'>['scope'];

/** The credential of a create or rotate answer, shown once, with what it is for. */
function credentialLines(ctx: Context, token: Schema<'ServiceTokenWithSecret'>, verb: string): string[] {
  return [
    `${verb} ${token.token_id} (${token.name}): ${token.scope} from ${token.mailbox}`,
    '',
    `  ${ctx.style.bold(token.token)}`,
    '',
    'This is the only time the token is shown: store it now. It works only on /v1/transactional/*',
    '(Authorization: Bearer <token>, with an Idempotency-Key on each send).',
  ];
}

export function registerTokenCommands(program: Command): void {
  const tokens = group(program, 'tokens', 'service tokens for the transactional API: one verified domain, one mailbox, message:send (owner or admin)', [
    'mailroom tokens create --name billing --domain acme.example --mailbox billing@acme.example',
    'mailroom tokens rotate tok_01m7yk3v0d8n2q3bz4xg5c6h7j',
  ]).alias('service-tokens');

  leaf(tokens, { name: 'list', isDefault: true, description: 'the service tokens of the workspace (never their credentials)', examples: ['mailroom tokens list'] }).action(
    run(async (ctx) => {
      const answer = await ctx.api().get('/app/api/service-tokens');
      ctx.show(answer, () =>
        answer.service_tokens.length === 0
          ? ['no service tokens yet: mailroom tokens create --name <name> --domain <domain> --mailbox <address>']
          : renderTable(
              answer.service_tokens,
              [
                { header: 'ID', value: (t) => t.token_id },
                { header: 'NAME', value: (t) => t.name, max: 30 },
                { header: 'MAILBOX', value: (t) => t.mailbox },
                { header: 'SCOPE', value: (t) => t.scope },
                { header: 'CREATED', value: (t) => relativeTime(t.created_at), style: (s) => ctx.style.dim(s) },
                { header: 'LAST USED', value: (t) => (t.last_used_at ? relativeTime(t.last_used_at) : 'never'), style: (s) => ctx.style.dim(s) },
              ],
              ctx.style,
            ),
      );
    }),
  );

  leaf(tokens, {
    name: 'create',
    description: 'create a service token; its credential is printed this once',
    examples: ['mailroom tokens create --name billing --domain acme.example --mailbox billing@acme.example', 'mailroom tokens create --name ci --domain dom_01m7yjdhcxqgt7jvmq1fx1c9wn --mailbox noreply@acme.example --json'],
  })
    .requiredOption('--name <name>', 'what it is for')
    .requiredOption('--domain <domain>', 'a verified sending domain (its id or its name)')
    .requiredOption('--mailbox <address>', 'the mailbox it sends from, in that domain')
    .option('--scope <scope>', 'the scope (only message:send exists)')
    .action(
      run<{ name: string; domain: string; mailbox: string; scope?: string }>(async (ctx, _args, options) => {
        const api = ctx.api();
        const token = await api.post('/app/api/service-tokens', {
          body: { name: options.name, domain_id: await domainId(api, options.domain), mailbox: options.mailbox, scope: given<Scope>(options.scope) },
        });
        ctx.show(token, () => credentialLines(ctx, token, 'created'));
      }),
    );

  leaf(tokens, {
    name: 'rotate <token_id>',
    description: 'replace the credential of a token; the old one stops working at once, the new one is printed this once',
    examples: ['mailroom tokens rotate tok_01m7yk3v0d8n2q3bz4xg5c6h7j'],
  }).action(
    run(async (ctx, [id = '']) => {
      const token = await ctx.api().post('/app/api/service-tokens/{token_id}/rotate', { path: { token_id: id } });
      ctx.show(token, () => credentialLines(ctx, token, 'rotated'));
    }),
  );

  leaf(tokens, { name: 'revoke <token_id>', alias: 'delete', description: 'revoke a token at once', examples: ['mailroom tokens revoke tok_01m7yk3v0d8n2q3bz4xg5c6h7j'] }).action(
    run(async (ctx, [id = '']) => {
      const answer = await ctx.api().delete('/app/api/service-tokens/{token_id}', { path: { token_id: id } });
      ctx.show(answer, () => [`revoked ${id}`]);
    }),
  );
}

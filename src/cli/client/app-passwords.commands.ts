import type { Command } from 'commander';
import { group, leaf, run } from './context.js';
import { relativeTime, renderTable } from './format.js';

export function registerAppPasswordCommands(program: Command): void {
  const passwords = group(program, 'app-passwords', "mail clients' passwords: one per client and mailbox, for IMAP and SMTP submission", [
    'mailroom app-passwords create --name Phone --mailbox alice@acme.example',
    'mailroom app-passwords revoke app_01m7yk3v0d8n2q3bz4xg5c6h7j',
  ]);

  leaf(passwords, { name: 'list', isDefault: true, description: 'your app passwords (an owner or admin: the workspace\'s), never the passwords, and the servers', examples: ['mailroom app-passwords list', 'mailroom app-passwords --json'] }).action(
    run(async (ctx) => {
      const answer = await ctx.api().get('/app/api/app-passwords');
      const { servers } = answer;
      const port = (value: number | null, security: string) => (value === null ? null : `${servers.host}:${value} (${security})`);
      const where = [
        ['IMAP', port(servers.imap_port, 'STARTTLS') ?? port(servers.imaps_port, 'TLS')],
        ['SMTP', port(servers.submission_port, 'STARTTLS') ?? port(servers.submissions_port, 'TLS')],
      ].flatMap(([name, value]) => (value ? [`${name}: ${value}`] : []));
      ctx.show(answer, () => [
        ...(answer.app_passwords.length === 0
          ? ['no app passwords yet: mailroom app-passwords create --name <name> --mailbox <address>']
          : renderTable(
              answer.app_passwords,
              [
                { header: 'ID', value: (p) => p.app_password_id },
                { header: 'NAME', value: (p) => p.name, max: 30 },
                { header: 'MAILBOX', value: (p) => p.mailbox },
                { header: 'CREATED', value: (p) => relativeTime(p.created_at), style: (s) => ctx.style.dim(s) },
                { header: 'LAST USED', value: (p) => (p.last_used_at ? relativeTime(p.last_used_at) : 'never'), style: (s) => ctx.style.dim(s) },
              ],
              ctx.style,
            )),
        ...(where.length > 0 ? ['', ...where] : []),
      ]);
    }),
  );

  leaf(passwords, { name: 'create', description: 'create an app password for a mailbox; the password is printed this once', examples: ['mailroom app-passwords create --name Phone --mailbox alice@acme.example'] })
    .requiredOption('--name <name>', 'what it is for ("Phone", "Thunderbird at home")')
    .requiredOption('--mailbox <address>', 'the mailbox it opens (also the user name in the mail client)')
    .action(
      run<{ name: string; mailbox: string }>(async (ctx, _args, options) => {
        const made = await ctx.api().post('/app/api/app-passwords', { body: { name: options.name, mailbox: options.mailbox } });
        ctx.show(made, () => [
          `created ${made.app_password_id} (${made.name}) for ${made.mailbox}`,
          '',
          `  ${ctx.style.bold(made.password)}`,
          '',
          'This is the only time the password is shown: enter it in the mail client now,',
          `with ${made.mailbox} as the user name (IMAP and SMTP submission; see mailroom app-passwords list for the servers).`,
        ]);
      }),
    );

  leaf(passwords, { name: 'revoke <app_password_id>', alias: 'delete', description: 'revoke an app password at once; clients logged in with it are disconnected', examples: ['mailroom app-passwords revoke app_01m7yk3v0d8n2q3bz4xg5c6h7j'] }).action(
    run(async (ctx, [id = '']) => {
      const answer = await ctx.api().delete('/app/api/app-passwords/{app_password_id}', { path: { app_password_id: id } });
      ctx.show(answer, () => [`revoked ${id}`]);
    }),
  );
}

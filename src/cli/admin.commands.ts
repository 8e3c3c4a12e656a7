import type { Command } from 'commander';
import { registerTransferCommands } from './admin/transfer.commands.js';
import { withServices } from './admin/with-services.js';
import { registerWorkspacesCommands } from './admin/workspaces.commands.js';
import { registerQuotaCommands } from './admin/quota.commands.js';
import { registerRetentionCommands } from './admin/retention.commands.js';
import { failWith, printResult } from './output.js';

interface JsonFlag {
  json?: boolean;
}

export function registerAdminCommands(program: Command): void {
  const admin = program
    .command('admin')
    .description('operator commands: workspaces, users, memberships, API keys, reserved mailboxes')
    .addHelpText('after', "\nExample:\n  $ mailroom admin bootstrap --email owner@example.com --password 's3cret-pass' --workspace Acme");

  admin
    .command('bootstrap')
    .description('create a workspace, its owner and a workspace API key')
    .requiredOption('--email <email>', 'the owner\'s email')
    .requiredOption('--password <password>', 'the owner\'s password (8+ characters)')
    .requiredOption('--workspace <name>', 'the workspace name')
    .option('--json', 'print {"workspace_id","user_id","api_key"}')
    .addHelpText('after', '\nExample:\n  $ mailroom admin bootstrap --email owner@example.com --password \'s3cret-pass\' --workspace Acme --json')
    .action(async (opts: { email: string; password: string; workspace: string } & JsonFlag) => {
      try {
        const result = await withServices((s) => s.tenancy.admin.bootstrap(opts));
        printResult(result, opts.json === true, [
          `workspace  ${result.workspace_id}`,
          `owner      ${result.user_id} (${opts.email.toLowerCase()})`,
          `api key    ${result.api_key}`,
          '',
          'The API key is shown only now: store it safely.',
        ]);
      } catch (err) {
        failWith(err);
      }
    });

  admin
    .command('create-user')
    .description('create a user (add it to a workspace with add-member)')
    .requiredOption('--email <email>', 'email address, used to log in')
    .requiredOption('--password <password>', 'password (8+ characters)')
    .option('--json', 'print JSON')
    .addHelpText('after', '\nExample:\n  $ mailroom admin create-user --email dev@example.com --password \'another-pass\'')
    .action(async (opts: { email: string; password: string } & JsonFlag) => {
      try {
        const result = await withServices((s) => s.tenancy.admin.createUser(opts));
        printResult(result, opts.json === true, [`user  ${result.user_id} (${result.email})`]);
      } catch (err) {
        failWith(err);
      }
    });

  admin
    .command('create-workspace')
    .description('create an empty workspace')
    .requiredOption('--name <name>', 'workspace name')
    .option('--json', 'print JSON')
    .addHelpText('after', '\nExample:\n  $ mailroom admin create-workspace --name "Acme EU"')
    .action(async (opts: { name: string } & JsonFlag) => {
      try {
        const result = await withServices((s) => s.tenancy.admin.createWorkspace(opts));
        printResult(result, opts.json === true, [`workspace  ${result.workspace_id} (${result.name})`]);
      } catch (err) {
        failWith(err);
      }
    });

  admin
    .command('add-member')
    .description('give a user a role in a workspace')
    .requiredOption('--workspace <id>', 'workspace id (ws_…)')
    .requiredOption('--email <email>', 'the user\'s email')
    .requiredOption('--role <role>', 'owner, admin or member')
    .option('--json', 'print JSON')
    .addHelpText('after', '\nExample:\n  $ mailroom admin add-member --workspace ws_01j… --email dev@example.com --role member')
    .action(async (opts: { workspace: string; email: string; role: string } & JsonFlag) => {
      try {
        const result = await withServices((s) => s.tenancy.admin.addMember(opts));
        printResult(result, opts.json === true, [`${opts.email.toLowerCase()} is now ${result.role} of ${result.workspace_id}`]);
      } catch (err) {
        failWith(err);
      }
    });

  admin
    .command('create-api-key')
    .description('create an API key for one workspace, or a platform key for the operator')
    .option('--workspace <id>', 'workspace id (ws_…)')
    .option('--platform', 'an operator key that names its tenant with X-Tenant-ID on each call')
    .option('--json', 'print JSON')
    .addHelpText('after', '\nExamples:\n  $ mailroom admin create-api-key --workspace ws_01j…\n  $ mailroom admin create-api-key --platform --json')
    .action(async (opts: { workspace?: string; platform?: boolean } & JsonFlag) => {
      try {
        const result = await withServices((s) => s.tenancy.admin.createApiKey(opts));
        printResult(result, opts.json === true, [
          `api key  ${result.api_key}`,
          `scope    ${result.workspace_id ?? 'platform (send X-Tenant-ID)'}`,
          '',
          'The API key is shown only now: store it safely.',
        ]);
      } catch (err) {
        failWith(err);
      }
    });

  admin
    .command('create-mailbox')
    .description("create a mailbox for a workspace, reserved addresses of hosted domains included (postmaster@, abuse@, …)")
    .requiredOption('--workspace <id>', 'workspace id (ws_…)')
    .requiredOption('--address <address>', 'the address, in a hosted domain or a verified sending domain of the workspace')
    .option('--description <text>', 'a description')
    .option('--json', 'print the mailbox as JSON')
    .addHelpText('after', '\nExample:\n  $ mailroom admin create-mailbox --workspace ws_01j… --address postmaster@mail.example.com')
    .action(async (opts: { workspace: string; address: string; description?: string } & JsonFlag) => {
      try {
        const result = await withServices((s) => s.mailboxes.createAsOperator(opts.workspace, { address: opts.address, description: opts.description }));
        printResult({ ...result, workspace_id: opts.workspace }, opts.json === true, [`mailbox  ${result.address} (workspace ${opts.workspace})`]);
      } catch (err) {
        failWith(err);
      }
    });

  registerWorkspacesCommands(admin);
  registerTransferCommands(admin);
  registerQuotaCommands(admin);
  registerRetentionCommands(admin);
}

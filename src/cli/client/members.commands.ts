import type { Command } from 'commander';
import { everyOf, type Schema } from './api.types.js';
import { group, leaf, run, type Context } from './context.js';
import { CliError } from './errors.js';
import { relativeTime, renderTable } from './format.js';
import type { ApiClient } from './http-client.js';
import { promptNewPassword, stdinLines } from './prompt.js';

type Role = Schema<'Member'>['role'];
const ROLES = everyOf<Role>()(['owner', 'admin', 'member']);

function checkRole(role: string): Role {
  const known = ROLES.find((r) => r === role);
  if (!known) throw new CliError(`the role must be one of ${ROLES.join(', ')}`);
  return known;
}

/** The user id of a member given by id (usr_…) or by email. */
async function memberId(api: ApiClient, wanted: string): Promise<string> {
  if (wanted.startsWith('usr_')) return wanted;
  const { members } = await api.get('/app/api/members');
  const found = members.find((m) => m.email === wanted.trim().toLowerCase());
  if (!found) throw new CliError(`${wanted} is not a member of this workspace (mailroom members lists them)`);
  return found.user_id;
}

interface AddOptions {
  role: string;
  newUser?: boolean;
  passwordStdin?: boolean;
}

/** The new user's password, when the member is to be created: piped in (its first line) or asked twice. */
async function newUserPassword(options: AddOptions): Promise<string | undefined> {
  if (options.passwordStdin) return (await stdinLines())[0] ?? '';
  if (options.newUser) return promptNewPassword("The new user's password");
  return undefined;
}

function memberTable(ctx: Context, members: Schema<'Member'>[]): string[] {
  return renderTable(
    members,
    [
      { header: 'USER', value: (m) => m.user_id },
      { header: 'EMAIL', value: (m) => m.email, max: 40 },
      { header: 'ROLE', value: (m) => m.role, style: (s, m) => (m.role === 'member' ? s : ctx.style.bold(s)) },
      { header: 'JOINED', value: (m) => relativeTime(m.joined_at), style: (s) => ctx.style.dim(s) },
    ],
    ctx.style,
  );
}

export function registerMemberCommands(program: Command): void {
  const members = group(program, 'members', 'members of the workspace and their roles (anyone lists; owner or admin changes)', [
    'mailroom members add dev@example.com --role admin',
    'mailroom members role dev@example.com member',
  ]);

  leaf(members, { name: 'list', isDefault: true, description: 'the members of the workspace, oldest first', examples: ['mailroom members list'] }).action(
    run(async (ctx) => {
      const answer = await ctx.api().get('/app/api/members');
      ctx.show(answer, () => memberTable(ctx, answer.members));
    }),
  );

  leaf(members, {
    name: 'add <email>',
    description: 'add a user to the workspace; with --new-user or --password-stdin, create the user first',
    examples: ['mailroom members add dev@example.com --role admin', 'mailroom members add new@example.com --new-user', 'printf "%s\\n" "$PASSWORD" | mailroom members add ci@example.com --password-stdin'],
  })
    .option('--role <role>', 'owner, admin or member', 'member')
    .option('--new-user', "create the user: asks for the new user's password twice")
    .option('--password-stdin', "create the user with the password on standard input's first line")
    .action(
      run<AddOptions>(async (ctx, [email = ''], options) => {
        const role = checkRole(options.role);
        const password = await newUserPassword(options);
        const added = await ctx.api().post('/app/api/members', { body: { email, role, password } });
        ctx.show(added, () => [`${added.user_created ? 'created the user and added' : 'added'} ${added.email} (${added.user_id}) as ${added.role}`]);
      }),
    );

  leaf(members, {
    name: 'role <member> <role>',
    description: "change a member's role (the member by email or user id); only an owner makes or changes an owner",
    examples: ['mailroom members role dev@example.com admin', 'mailroom members role usr_01m7yd26naqk0q1qkrh106hdbd owner'],
  }).action(
    run(async (ctx, [member = '', role = '']) => {
      const api = ctx.api();
      const changed = await api.patch('/app/api/members/{user_id}', { path: { user_id: await memberId(api, member) }, body: { role: checkRole(role) } });
      ctx.show(changed, () => [`${changed.email} is now ${changed.role}`]);
    }),
  );

  leaf(members, {
    name: 'remove <member>',
    description: 'take a member out of the workspace (by email or user id); the user keeps their login',
    examples: ['mailroom members remove dev@example.com'],
  }).action(
    run(async (ctx, [member = '']) => {
      const api = ctx.api();
      const id = await memberId(api, member);
      const answer = await api.delete('/app/api/members/{user_id}', { path: { user_id: id } });
      ctx.show(answer, () => [`removed ${member} from the workspace`]);
    }),
  );
}

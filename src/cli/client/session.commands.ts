import type { Command } from 'commander';
import type { Schema } from './api.types.js';
import { group, leaf, run, type Context } from './context.js';
import { ApiError, CliError } from './errors.js';
import { relativeTime, renderFields, renderTable } from './format.js';
import { createApiClient } from './http-client.js';
import { promptHidden, promptLine, promptNewPassword, readStdin, stdinLines } from './prompt.js';

/** How long logging in waits for the old session's logout, which is only a courtesy. */
const REVOKE_TIMEOUT_MS = 5000;

type SessionInfo = Schema<'Session'>;
type WorkspaceMembership = Schema<'WorkspaceMembership'>;

const workspaceLabel = (w: WorkspaceMembership) => `${w.name} (${w.workspace_id}, ${w.role})`;

function activeWorkspace(session: SessionInfo): WorkspaceMembership | undefined {
  return session.workspaces.find((w) => w.workspace_id === session.active_workspace_id);
}

/** What a person wants to know after login or whoami: who, where, and in which workspace. */
function describeWorkspaces(session: SessionInfo): string[] {
  const active = activeWorkspace(session);
  if (!active) {
    if (session.workspaces.length === 0) return ['You are in no workspace yet: an owner can add you (mailroom admin add-member).'];
    return ['No active workspace: choose one with mailroom workspaces use <workspace>.'];
  }
  const lines = [`Active workspace: ${workspaceLabel(active)}`];
  if (session.workspaces.length > 1) lines.push(`You are in ${session.workspaces.length} workspaces: mailroom workspaces lists them.`);
  return lines;
}

/** Read the password from stdin: everything up to one final line break. */
async function passwordFromStdin(): Promise<string> {
  return (await readStdin()).replace(/\r?\n$/, '');
}

async function login(ctx: Context, options: { email?: string; passwordStdin?: boolean }): Promise<void> {
  const email = (options.email ?? (await promptLine('Email: ', 'the email; pass --email'))).trim();
  if (!email) throw new CliError('an email is needed: pass --email');
  const password = options.passwordStdin ? await passwordFromStdin() : await promptHidden('Password: ');
  if (!password) throw new CliError('the password is empty');
  const answer = await ctx.anonymous().post('/app/api/login', { body: { email, password } });
  const previous = ctx.config.session && ctx.config.server ? { server: ctx.config.server, token: ctx.config.session.token } : null;
  ctx.saveConfig({ server: ctx.server, session: { token: answer.session_token, email: answer.user.email } });
  if (previous && previous.token !== answer.session_token) {
    // The replaced session would otherwise stay valid on its server for up to 14 days.
    await createApiClient(previous.server, previous.token, REVOKE_TIMEOUT_MS)
      .post('/app/api/logout')
      .catch(() => undefined);
  }
  const { session_token: _secret, ...session } = answer;
  ctx.show({ ...session, server: ctx.server }, () => [`Logged in to ${ctx.server} as ${session.user.email}.`, ...describeWorkspaces(session)]);
}

/** The current and the new password: the first two lines of stdin, or asked on the terminal (the new one twice). */
async function passwords(fromStdin: boolean): Promise<{ current_password: string; new_password: string }> {
  if (fromStdin) {
    const [current = '', next = ''] = await stdinLines();
    if (!current || !next) throw new CliError('give the current password on the first line of standard input and the new one on the second');
    return { current_password: current, new_password: next };
  }
  const current = await promptHidden('Current password: ');
  return { current_password: current, new_password: await promptNewPassword('New password') };
}

async function changePassword(ctx: Context, options: { passwordStdin?: boolean }): Promise<void> {
  const api = ctx.api();
  const answer = await api.post('/app/api/session/password', { body: await passwords(options.passwordStdin === true) });
  const others = answer.sessions_ended === 1 ? '1 other session was' : `${answer.sessions_ended} other sessions were`;
  ctx.show(answer, () => [`Password changed. ${others} logged out; this one stays.`]);
}

async function logout(ctx: Context): Promise<void> {
  let ended = false;
  try {
    await ctx.api().post('/app/api/logout');
  } catch (err) {
    // An expired or revoked session is as logged out as it gets: forget it all the same.
    if (!(err instanceof ApiError && err.status === 401)) throw err;
    ended = true;
  }
  ctx.saveConfig({ server: ctx.config.server });
  ctx.show({ ok: true }, () => [ended ? 'Logged out (the session had already ended).' : `Logged out of ${ctx.server}.`]);
}

async function whoami(ctx: Context): Promise<void> {
  const session = await ctx.api().get('/app/api/session');
  const active = activeWorkspace(session);
  ctx.show({ ...session, server: ctx.server }, () =>
    renderFields(
      [
        ['Server', ctx.server],
        ['User', `${session.user.email} (${session.user.user_id})`],
        ['Workspace', active ? workspaceLabel(active) : 'none (mailroom workspaces use <workspace>)'],
        ['Session', `expires ${relativeTime(session.expires_at)} if unused`],
      ],
      ctx.style,
    ),
  );
}

function workspaceTable(ctx: Context, session: SessionInfo): string[] {
  if (session.workspaces.length === 0) return ['You are in no workspace yet.'];
  return renderTable(
    session.workspaces,
    [
      { header: ' ', value: (w) => (w.workspace_id === session.active_workspace_id ? '*' : ''), style: (t) => ctx.style.green(t) },
      { header: 'ID', value: (w) => w.workspace_id },
      { header: 'NAME', value: (w) => w.name, max: 40 },
      { header: 'ROLE', value: (w) => w.role },
    ],
    ctx.style,
  );
}

/** The id of the user's workspace with this name, when exactly one has it. */
function workspaceNamed(session: SessionInfo, wanted: string): string {
  const matches = session.workspaces.filter((w) => w.name.toLowerCase() === wanted.toLowerCase());
  if (matches.length === 1 && matches[0]) return matches[0].workspace_id;
  if (matches.length > 1) throw new CliError(`${matches.length} workspaces are named '${wanted}'; use the id (mailroom workspaces)`);
  throw new CliError(`you are in no workspace named '${wanted}' (mailroom workspaces lists them)`);
}

export function registerSessionCommands(program: Command): void {
  leaf(program, {
    name: 'login',
    description: 'log in to a Mailroom server; the session is kept for the next commands',
    examples: ['mailroom login --server https://mail.example.com --email you@example.com', 'printf "%s\\n" "$PASSWORD" | mailroom login --email you@example.com --password-stdin'],
  })
    .option('--email <email>', 'your email (asked for when not given)')
    .option('--password-stdin', 'read the password from standard input instead of asking for it')
    .action(run<{ email?: string; passwordStdin?: boolean }>((ctx, _args, options) => login(ctx, options)));

  leaf(program, { name: 'logout', description: 'end the session on the server and forget it here', examples: ['mailroom logout'] }).action(
    run((ctx) => logout(ctx)),
  );

  leaf(program, {
    name: 'password',
    description: 'change your password; your other sessions are logged out',
    examples: ['mailroom password', 'printf "%s\\n%s\\n" "$OLD" "$NEW" | mailroom password --password-stdin'],
  })
    .option('--password-stdin', 'read the current password (first line) and the new one (second line) from standard input')
    .action(run<{ passwordStdin?: boolean }>((ctx, _args, options) => changePassword(ctx, options)));

  leaf(program, { name: 'whoami', description: 'show the server, the user and the active workspace', examples: ['mailroom whoami', 'mailroom whoami --json'] }).action(
    run((ctx) => whoami(ctx)),
  );

  const workspaces = group(program, 'workspaces', 'list your workspaces and choose the active one', ['mailroom workspaces', 'mailroom workspaces use ws_01m7yd2cwd310e4dkn6d1cayfy']);
  leaf(workspaces, { name: 'list', isDefault: true, description: 'list your workspaces; * marks the active one', examples: ['mailroom workspaces list'] }).action(
    run(async (ctx) => {
      const session = await ctx.api().get('/app/api/session');
      ctx.show({ workspaces: session.workspaces, active_workspace_id: session.active_workspace_id }, () => workspaceTable(ctx, session));
    }),
  );
  leaf(workspaces, {
    name: 'use <workspace>',
    description: 'make a workspace (its id, or its name) the active one for this session',
    examples: ['mailroom workspaces use ws_01m7yd2cwd310e4dkn6d1cayfy', 'mailroom workspaces use "Acme EU"'],
  }).action(
    run(async (ctx, [wanted = '']) => {
      const api = ctx.api();
      const target = wanted.startsWith('ws_') ? wanted : workspaceNamed(await api.get('/app/api/session'), wanted);
      const session = await api.post('/app/api/workspaces/select', { body: { workspace_id: target } });
      const active = activeWorkspace(session);
      ctx.show(session, () => [`Active workspace: ${active ? workspaceLabel(active) : target}`]);
    }),
  );
}

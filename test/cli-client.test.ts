import { existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname } from 'node:path';
import type { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildProgram } from '../src/cli/index.js';
import { SESSION_IDLE_MS } from '../src/modules/tenancy/auth.service.js';
import { runCli } from './helpers/cli.js';
import { cliUser, listen, runInTerminal } from './helpers/cli-client.js';
import { TEST_DIALECT } from './helpers/database.js';
import { createTenant, startHarness, type Harness, type Tenant } from './helpers/harness.js';
import { freePort } from './helpers/ports.js';

interface Session {
  user: { email: string };
  workspaces: { workspace_id: string; name: string; role: string }[];
  active_workspace_id: string | null;
  server: string;
}

const NO_STACK = /\n\s+at /;

describe(`mailroom CLI client: login, session and failures (${TEST_DIALECT})`, () => {
  let h: Harness;
  let url: string;
  let acme: Tenant;
  let betaId: string;

  beforeAll(async () => {
    h = await startHarness();
    h.clock.set(Date.now());
    url = await listen(h.app);
    acme = await createTenant(h, 'Acme');
    betaId = (await h.services.tenancy.admin.createWorkspace({ name: 'Beta Team' })).workspace_id;
    await h.services.tenancy.admin.addMember({ workspace: betaId, email: acme.ownerEmail, role: 'admin' });
  });
  afterAll(async () => h.close());

  const sessionOf = (token: string) => fetch(`${url}/app/api/session`, { headers: { 'x-service-session': token } });

  it('logs in with --password-stdin, keeps the token in a private file and never prints it', async () => {
    const user = cliUser(url);
    const login = await user.login(acme.ownerEmail, acme.password);
    expect(login.stderr).toBe('');
    expect(login.code).toBe(0);
    expect(login.stdout).toBe(`Logged in to ${url} as ${acme.ownerEmail}.\nActive workspace: Acme (${acme.workspaceId}, owner)\nYou are in 2 workspaces: mailroom workspaces lists them.\n`);

    const config = user.config();
    expect(config.server).toBe(url);
    expect(config.session?.email).toBe(acme.ownerEmail);
    const token = config.session?.token ?? '';
    expect(token).toMatch(/^mrs_/);
    expect(statSync(user.configFile).mode & 0o777).toBe(0o600);
    expect(statSync(dirname(user.configFile)).mode & 0o777).toBe(0o700);
    expect((await sessionOf(token)).status).toBe(200);

    const whoami = await user.run(['whoami']);
    expect(whoami.code).toBe(0);
    expect(whoami.stdout).toMatch(new RegExp(`^Server +${url}\nUser +${acme.ownerEmail} \\(${acme.ownerId}\\)\nWorkspace +Acme \\(${acme.workspaceId}, owner\\)\nSession +expires in 14 days if unused\n$`));
    const json = await user.json<Session & { session_token?: string }>(['whoami']);
    expect(json).toMatchObject({ server: url, user: { email: acme.ownerEmail }, active_workspace_id: acme.workspaceId });

    const again = await user.run(['login', '--email', acme.ownerEmail, '--password-stdin', '--json'], { input: `${acme.password}\r\n` });
    expect(again.code).toBe(0);
    const loggedIn = JSON.parse(again.stdout) as Session & { session_token?: string };
    expect(loggedIn.session_token).toBeUndefined();
    expect(loggedIn).toMatchObject({ server: url, user: { email: acme.ownerEmail } });
    // The second login replaced the first session, which it revoked on the way.
    expect((await sessionOf(token)).status).toBe(401);
    const newToken = user.config().session?.token ?? '';
    for (const output of [login, whoami, again]) expect(output.stdout + output.stderr).not.toContain('mrs_');
    expect(newToken).not.toBe(token);
    expect((await sessionOf(newToken)).status).toBe(200);
  });

  it('lists the workspaces and switches between them by id or by name', async () => {
    const user = cliUser(url);
    await user.login(acme.ownerEmail, acme.password);
    const list = await user.run(['workspaces']);
    expect(list.code).toBe(0);
    expect(list.stdout.split('\n')).toEqual([
      '   ID                             NAME       ROLE',
      `*  ${acme.workspaceId}  Acme       owner`,
      `   ${betaId}  Beta Team  admin`,
      '',
    ]);
    const byName = await user.run(['workspaces', 'use', 'beta team']);
    expect(byName.stderr).toBe('');
    expect(byName.stdout).toBe(`Active workspace: Beta Team (${betaId}, admin)\n`);
    expect((await user.json<{ active_workspace_id: string }>(['workspaces'])).active_workspace_id).toBe(betaId);
    const byId = await user.json<Session>(['workspaces', 'use', acme.workspaceId]);
    expect(byId.active_workspace_id).toBe(acme.workspaceId);

    const unknown = await user.run(['workspaces', 'use', 'Gamma']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe("error: you are in no workspace named 'Gamma' (mailroom workspaces lists them)\n");
    const foreign = await user.run(['workspaces', 'use', 'ws_01nosuchworkspace0000000000']);
    expect(foreign.code).toBe(1);
    expect(foreign.stderr).toBe('error: 404 workspace_not_found: no workspace ws_01nosuchworkspace0000000000\n');
  });

  it('refuses bad credentials in one line and stores nothing', async () => {
    const user = cliUser(url);
    const wrong = await user.login(acme.ownerEmail, 'not the password');
    expect(wrong.code).toBe(1);
    expect(wrong.stdout).toBe('');
    expect(wrong.stderr).toBe('error: 401 invalid_credentials: email or password is wrong\n');
    expect(existsSync(user.configFile)).toBe(false);

    const unknown = await user.login('nobody@example.com', 'whatever-pass');
    expect(unknown.stderr).toBe('error: 401 invalid_credentials: email or password is wrong\n');

    const empty = await user.run(['login', '--server', url, '--email', acme.ownerEmail, '--password-stdin'], { input: '\n' });
    expect(empty.code).toBe(1);
    expect(empty.stderr).toBe('error: the password is empty\n');
    const noTerminal = await user.run(['login', '--server', url, '--email', acme.ownerEmail]);
    expect(noTerminal.code).toBe(1);
    expect(noTerminal.stderr).toBe('error: no terminal to ask for the password; pipe it in with --password-stdin\n');
  });

  it('says when there is no session, or the session is for another server', async () => {
    const user = cliUser(url);
    const none = await user.run(['mailboxes']);
    expect(none.code).toBe(1);
    expect(none.stderr).toBe('error: not logged in — run mailroom login\n');

    await user.login(acme.ownerEmail, acme.password);
    const requests: IncomingHttpHeaders[] = [];
    const other = createServer((req, res) => {
      requests.push(req.headers);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
    const otherUrl = await serve(other);
    try {
      const elsewhere = await user.run(['whoami', '--server', otherUrl]);
      expect(elsewhere.code).toBe(1);
      expect(elsewhere.stderr).toBe(`error: not logged in to ${otherUrl} (the stored session is for ${url}) — run mailroom login --server ${otherUrl}\n`);
      const viaEnv = await user.run(['mailboxes'], { env: { MAILROOM_SERVER: `${otherUrl}/` } });
      expect(viaEnv.stderr).toBe(`error: not logged in to ${otherUrl} (the stored session is for ${url}) — run mailroom login --server ${otherUrl}\n`);
      // The token never went to the other server.
      expect(requests).toEqual([]);
    } finally {
      other.close();
    }

    const bad = await user.run(['whoami', '--server', 'ftp://example.com']);
    expect(bad.stderr).toBe("error: --server must be an http:// or https:// URL, not 'ftp://example.com'\n");
    const worse = await user.run(['whoami'], { env: { MAILROOM_SERVER: 'not a url' } });
    expect(worse.stderr).toBe("error: MAILROOM_SERVER 'not a url' is not a URL (for example http://127.0.0.1:8080)\n");
  });

  it('tells a user without a workspace what to do', async () => {
    await h.services.tenancy.admin.createUser({ email: 'loner@example.com', password: 'loner-password' });
    const user = cliUser(url);
    const login = await user.login('loner@example.com', 'loner-password');
    expect(login.stdout).toBe(`Logged in to ${url} as loner@example.com.\nYou are in no workspace yet: an owner can add you (mailroom admin add-member).\n`);
    const mailboxes = await user.run(['mailboxes']);
    expect(mailboxes.code).toBe(1);
    expect(mailboxes.stderr).toMatch(/^error: 403 no_active_workspace: .+ — run mailroom workspaces use <workspace>\n$/);
  });

  it('reports a server that is down, or that redirects, in one line and without a stack trace', async () => {
    const user = cliUser(url);
    const deadPort = await freePort();
    const dead = `http://127.0.0.1:${deadPort}`;
    const login = await user.run(['login', '--server', dead, '--email', 'a@example.com', '--password-stdin'], { input: 'secret-pass\n' });
    expect(login.code).toBe(1);
    expect(login.stderr).toBe(`error: cannot reach ${dead} (connection refused)\n`);

    // A stored session for a server that has gone away since.
    mkdirSync(dirname(user.configFile), { recursive: true });
    writeFileSync(user.configFile, JSON.stringify({ server: dead, session: { token: 'mrs_stale', email: 'a@example.com' } }));
    for (const args of [['whoami'], ['messages', 'list'], ['logout']]) {
      const result = await user.run(args);
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr).toBe(`error: cannot reach ${dead} (connection refused)\n`);
    }
    expect(user.config().session?.token).toBe('mrs_stale'); // logout failed: the session may still be live there

    const requests: IncomingHttpHeaders[] = [];
    const redirecting = createServer((req, res) => {
      requests.push(req.headers);
      res.writeHead(302, { location: 'http://elsewhere.example/app/api/session' }).end();
    });
    const redirectUrl = await serve(redirecting);
    try {
      writeFileSync(user.configFile, JSON.stringify({ server: redirectUrl, session: { token: 'mrs_kept', email: 'a@example.com' } }));
      const result = await user.run(['whoami']);
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(`error: ${redirectUrl} answered 302 (redirect to http://elsewhere.example/app/api/session); redirects are not followed — check --server\n`);
      expect(requests).toHaveLength(1);
    } finally {
      redirecting.close();
    }

    const proxy = createServer((_req, res) => res.writeHead(502, { 'content-type': 'text/html' }).end('<html><body><h1>502 Bad Gateway</h1></body></html>'));
    const proxyUrl = await serve(proxy);
    try {
      writeFileSync(user.configFile, JSON.stringify({ server: proxyUrl, session: { token: 'mrs_kept', email: 'a@example.com' } }));
      const result = await user.run(['mailboxes']);
      expect(result.code).toBe(1);
      expect(result.stderr).toBe('error: 502 bad_gateway: <html><body><h1>502 Bad Gateway</h1></body></html>\n');
    } finally {
      proxy.close();
    }

    writeFileSync(user.configFile, '{not json');
    const corrupt = await user.run(['whoami']);
    expect(corrupt.stderr).toBe(`error: ${user.configFile} is not valid JSON; delete it and run mailroom login\n`);
    expect(corrupt.stderr).not.toMatch(NO_STACK);
  });

  it('logs out on the server and here; a later command says to log in', async () => {
    const user = cliUser(url);
    await user.login(acme.ownerEmail, acme.password);
    const token = user.config().session?.token ?? '';
    const logout = await user.run(['logout']);
    expect(logout.code).toBe(0);
    expect(logout.stdout).toBe(`Logged out of ${url}.\n`);
    expect((await sessionOf(token)).status).toBe(401);
    expect(user.config()).toEqual({ server: url });
    const after = await user.run(['whoami']);
    expect(after.stderr).toBe(`error: not logged in — run mailroom login --server ${url}\n`);
  });

  it('says an expired session has expired and how to log in again', async () => {
    const user = cliUser(url);
    await user.login(acme.ownerEmail, acme.password);
    const other = cliUser(url);
    await other.login(acme.ownerEmail, acme.password);
    h.clock.advance(SESSION_IDLE_MS + 1);
    try {
      for (const args of [['whoami'], ['mailboxes'], ['messages', 'show', 'msg_x']]) {
        const result = await user.run(args);
        expect(result.code).toBe(1);
        expect(result.stdout).toBe('');
        expect(result.stderr).toBe('error: 401 session_expired: the session has expired; log in again — run mailroom login\n');
      }
      const logout = await other.run(['logout']);
      expect(logout.code).toBe(0);
      expect(logout.stdout).toBe('Logged out (the session had already ended).\n');
      expect(other.config().session).toBeUndefined();
      const relogin = await user.login(acme.ownerEmail, acme.password);
      expect(relogin.code).toBe(0);
      expect((await user.run(['whoami'])).code).toBe(0);
    } finally {
      h.clock.set(Date.now());
    }
  });

  it('asks for the password on a terminal without echoing it, and colours only a terminal without NO_COLOR', async () => {
    const user = cliUser(url);
    const password = 'typed-in-secret';
    await h.services.tenancy.admin.createUser({ email: 'typist@example.com', password });
    await h.services.tenancy.admin.addMember({ workspace: acme.workspaceId, email: 'typist@example.com', role: 'member' });
    const login = await runInTerminal(['login', '--server', url], user.env, [
      { waitFor: 'Email: ', send: 'typist@example.com\r' },
      { waitFor: 'Password: ', send: `${password}\r` },
    ]);
    expect(login.code).toBe(0);
    expect(login.output).toContain('Logged in to');
    expect(login.output).not.toContain(password);
    expect(user.config().session?.email).toBe('typist@example.com');

    const coloured = await runInTerminal(['workspaces'], user.env);
    expect(coloured.code).toBe(0);
    expect(coloured.output).toContain('\u001b[1mID\u001b[22m');
    const noColour = await runInTerminal(['workspaces'], { ...user.env, NO_COLOR: '1' });
    expect(noColour.output).toContain('ID');
    expect(noColour.output).not.toContain('\u001b[');
    const piped = await user.run(['workspaces']);
    expect(piped.stdout).not.toContain('\u001b[');
    const failing = await runInTerminal(['messages', 'show', 'msg_nope'], user.env);
    expect(failing.code).toBe(1);
    expect(failing.output).toBe('\u001b[31merror:\u001b[39m 404 message_not_found: no message msg_nope\n');

    const interrupted = await runInTerminal(['login', '--server', url, '--email', 'typist@example.com'], cliUser(url).env, [{ waitFor: 'Password: ', send: 'abc\u0003' }]);
    expect(interrupted.code).toBe(130);
    expect(interrupted.output).not.toContain('abc');
  });

  it('has --help with an example on every command, and --json and --server on every client command', async () => {
    const program = buildProgram();
    const all = (command: Command): Command[] => [command, ...command.commands.flatMap(all)];
    const clientGroup = program.commands.filter((c) => c.helpGroup().startsWith('Client commands'));
    expect(clientGroup.map((c) => c.name())).toEqual(['login', 'logout', 'password', 'whoami', 'workspaces', 'mailboxes', 'messages', 'threads', 'drafts', 'send', 'send-batch', 'sent', 'lists', 'suppressions', 'domains', 'tokens', 'webhooks', 'keys', 'app-passwords', 'members', 'audit-log', 'watch', 'sandbox']);
    for (const command of all(program)) {
      let help = '';
      command.configureOutput({ writeOut: (text) => (help += text), writeErr: (text) => (help += text) });
      command.outputHelp();
      expect(help, `help of ${command.name()}`).toMatch(/\nExamples?:\n {2}\$ \S/);
    }
    for (const command of clientGroup.flatMap(all).filter((c) => c.commands.length === 0)) {
      const flags = command.options.map((o) => o.long);
      expect(flags, command.name()).toEqual(expect.arrayContaining(['--json', '--server']));
    }

    const help = await runCli(['messages', 'download', '--help'], {});
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: mailroom messages download [options] <message_id> <attachment_id>');
    expect(help.stdout).toContain('Examples:\n  $ mailroom messages download msg_');
    const missing = await runCli(['messages', 'show'], {});
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("error: missing required argument 'message_id'");
  });
});

function serve(server: Server): Promise<string> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
}

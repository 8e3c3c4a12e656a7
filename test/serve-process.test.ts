import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, ROOT, runCli } from './helpers/cli.js';
import { createTestDatabase, TEST_DIALECT, type TestDatabase } from './helpers/database.js';
import { TEST_SERVICE_ENV } from './helpers/service-env.js';

// `mailroom serve` as a process: `npm start` stops on the signals npm gets, logs are pretty only
// on a terminal, and a port in use is one line naming the variable to change.

/** Longest a step may take before the test gives up on it (a failure, never a measurement). */
const STEP_DEADLINE_MS = 45_000;

interface Running {
  child: ChildProcess;
  output: () => string;
  /** Output ended and the process exited (a process left behind holding the pipes delays this; see exitOf). */
  closed: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** How the process exited, once it has (whether or not something it started still holds its output). */
function exitOf(running: Running): { code: number | null; signal: NodeJS.Signals | null } | undefined {
  const { exitCode, signalCode } = running.child;
  return exitCode === null && signalCode === null ? undefined : { code: exitCode, signal: signalCode };
}

function run(command: string, args: string[], env: Record<string, string>): Running {
  const child = spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
  return { child, output: () => out, closed };
}

/** Poll `probe` until it answers; fail at the deadline, or at once if `running` (whose output the error shows) exits. */
async function waitFor<T>(what: string, probe: () => T | undefined, running: Running, untilExit = true): Promise<T> {
  const deadline = Date.now() + STEP_DEADLINE_MS;
  for (;;) {
    const found = probe();
    if (found !== undefined) return found;
    if (Date.now() > deadline || (untilExit && exitOf(running) !== undefined)) throw new Error(`no ${what}; output:\n${running.output()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function jsonLines(text: string): Array<Record<string, unknown>> {
  return text.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Resolves when `port` on 127.0.0.1 can be listened on again. */
function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

function occupy(): Promise<{ server: Server; port: number }> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      resolve({ server, port: typeof address === 'object' && address ? address.port : 0 });
    });
  });
}

describe(`mailroom serve as a process (${TEST_DIALECT})`, () => {
  let database: TestDatabase;
  let env: Record<string, string>;

  beforeAll(async () => {
    database = await createTestDatabase();
    env = {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      ...TEST_SERVICE_ENV,
      MAILROOM_DATABASE_URL: database.url,
      ...database.secretEnv,
      MAILROOM_HTTP_PORT: '0',
      MAILROOM_SMTP_PORT: '0',
      MAILROOM_SMTP_PARSER_THREADS: '0',
      MAILROOM_DKIM_THREADS: '0',
    };
  });
  afterAll(async () => database.drop());

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`npm start stops the server when npm gets ${signal}, and frees its ports`, async () => {
      const npm = run('npm', ['start'], env);
      let serverPid: number | undefined;
      try {
        const started = await waitFor('"mailroom started" line', () => jsonLines(npm.output()).find((l) => l.msg === 'mailroom started'), npm);
        serverPid = started.pid as number;
        const httpPort = Number(new URL(started.http as string).port);
        const smtpPort = jsonLines(npm.output()).find((l) => l.msg === 'smtp listening')?.port as number;
        expect(serverPid).not.toBe(npm.child.pid);

        npm.child.kill(signal);
        const exit = await waitFor('exit of npm', () => exitOf(npm), npm, false);
        const pid = serverPid;
        await waitFor('exit of the server process', () => (alive(pid) ? undefined : true), npm, false);
        expect(exit).toEqual({ code: 0, signal: null });
        expect(jsonLines(npm.output()).map((l) => l.msg)).toEqual(expect.arrayContaining(['shutting down', 'stopped']));
        expect(jsonLines(npm.output()).find((l) => l.msg === 'shutting down')?.signal).toBe(signal);
        // npm start gives Node the server's flags, so no warning about them.
        expect(jsonLines(npm.output()).filter((l) => l.missing_node_flags !== undefined)).toEqual([]);
        expect(await canListen(httpPort)).toBe(true);
        expect(await canListen(smtpPort)).toBe(true);
      } finally {
        npm.child.kill('SIGKILL');
        if (serverPid !== undefined && alive(serverPid)) process.kill(serverPid, 'SIGKILL');
      }
    }, 120_000);
  }

  it('logs JSON lines when standard output is not a terminal, pretty lines when MAILROOM_LOG_FORMAT=pretty', async () => {
    const plain = run(process.execPath, [BIN, 'serve'], env);
    await waitFor('"mailroom started" line', () => jsonLines(plain.output()).find((l) => l.msg === 'mailroom started'), plain);
    plain.child.kill('SIGTERM');
    expect((await plain.closed).code).toBe(0);
    const lines = plain.output().split('\n').filter((l) => l.length > 0);
    expect(lines.length).toBeGreaterThan(3);
    for (const line of lines) expect(() => JSON.parse(line) as unknown, line).not.toThrow();
    // Started without the flags npm start gives: one warning names them and the command that has them.
    const warning = jsonLines(plain.output()).find((l) => l.missing_node_flags !== undefined);
    expect(warning?.missing_node_flags).toEqual(['--max-semi-space-size=64']);
    expect(warning?.msg).toContain('node --max-semi-space-size=64 bin/mailroom.js serve');

    const pretty = run(process.execPath, [BIN, 'serve'], { ...env, MAILROOM_LOG_FORMAT: 'pretty' });
    await waitFor('pretty "mailroom started" line', () => (/INFO: mailroom started/.test(pretty.output()) ? true : undefined), pretty);
    pretty.child.kill('SIGTERM');
    expect((await pretty.closed).code).toBe(0);
    expect(pretty.output()).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: smtp listening \{"host":"127\.0\.0\.1","port":\d+\}$/m);
    expect(pretty.output()).toMatch(/INFO: stopped$/m);
    expect(jsonLines(pretty.output())).toEqual([]);
    // Not on a terminal, so no colours even when pretty.
    expect(pretty.output()).not.toContain('\u001b[');
  }, 120_000);

  it('logs pretty, coloured lines on a terminal by default', async () => {
    // script(1) runs the server on a pseudo-terminal; `exec` makes the shell's pid, printed first, the server's.
    const tty = run('script', ['-qfec', `echo "pid=$$"; exec ${process.execPath} ${BIN} serve`, '/dev/null'], env);
    await waitFor('pretty "mailroom started" line', () => (/mailroom started/.test(tty.output()) ? true : undefined), tty);
    const pid = Number(/pid=(\d+)/.exec(tty.output())?.[1]);
    process.kill(pid, 'SIGTERM');
    await tty.closed;
    const text = tty.output();
    expect(text).toContain('\u001b['); // colours
    expect(text).toMatch(/INFO.*: .*mailroom started/);
    expect(text).toMatch(/stopped/);
    expect(text).not.toContain('{"level"');
  }, 120_000);

  for (const [variable, listener] of [['MAILROOM_HTTP_PORT', 'HTTP API'], ['MAILROOM_SMTP_PORT', 'SMTP']] as const) {
    it(`a port in use for ${listener} is one line naming the address, the port and ${variable}`, async () => {
      const { server, port } = await occupy();
      try {
        const result = await runCli(['serve'], { ...env, [variable]: String(port) }, 60_000);
        expect(result.code).toBe(1);
        expect(result.stderr).toBe(`mailroom: ${listener} cannot listen on 127.0.0.1:${port}: the port is already in use; stop what holds it, or set ${variable} to a free port (0 picks one)\n`);
        // No stack trace, on stderr or in the JSON log.
        expect(result.stdout).not.toMatch(/EADDRINUSE|"stack"|\n\s+at /);
        for (const line of jsonLines(result.stdout)) expect(line.level as number).toBeLessThan(50);
      } finally {
        server.close();
      }
    }, 120_000);
  }
});

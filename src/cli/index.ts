import { Command, InvalidArgumentError } from 'commander';
import { ROLES, type ProcessRole } from '../config/roles.js';
import type { Logger } from '../lib/logger.js';
import type { RunningService } from '../main.js';
import { registerAdminCommands } from './admin.commands.js';
import { registerClientCommands } from './client/register.js';
import { missingServerFlags, SERVER_NODE_FLAGS } from './node-flags.js';
import { failWith, printResult } from './output.js';

function parseRoles(value: string, previous: ProcessRole[] = []): ProcessRole[] {
  const roles = value.split(',').map((r) => r.trim());
  for (const role of roles) {
    if (!ROLES.includes(role as ProcessRole)) throw new InvalidArgumentError(`unknown role '${role}' (use ${ROLES.join(', ')})`);
  }
  return [...new Set([...previous, ...(roles as ProcessRole[])])];
}

/** `mailroom serve`: start the roles, then stop gracefully on SIGTERM or SIGINT. */
async function serve(roles: ProcessRole[], sandbox: boolean): Promise<void> {
  let config;
  try {
    const { environmentWithDotenv, loadConfig, withSandboxDefaults } = await import('../config/config.js');
    const loaded = loadConfig(sandbox ? withSandboxDefaults(environmentWithDotenv()) : environmentWithDotenv());
    config = sandbox ? Object.freeze({ ...loaded, sandbox: true }) : loaded;
  } catch (err) {
    failWith(err);
  }
  // The service (and its configuration) is loaded only by the commands that run it, so the client commands
  // start quickly; a lint rule keeps src/cli/client from importing it (eslint.config.js).
  const [{ createProcessLogger }, { startService }] = await Promise.all([import('../lib/logger.js'), import('../main.js')]);
  const logger = await createProcessLogger(config.logLevel, config.logFormat);
  let running;
  try {
    running = await startService(config, roles, logger);
  } catch (err) {
    // A listener that cannot start says in its one line which variable to change; a stack would bury it.
    if (!(err instanceof Error && err.name === 'ListenError')) logger.fatal({ err }, 'start-up failed');
    failWith(err);
  }
  logger.info({ roles, http: running.httpUrl, metrics: running.metricsUrl, sandbox: running.sandboxDns !== null }, 'mailroom started');
  const missing = missingServerFlags(process.execArgv, process.env.NODE_OPTIONS);
  if (missing.length > 0) logger.warn({ missing_node_flags: missing }, `node was started without ${missing.join(' ')}: start the server as \`node ${SERVER_NODE_FLAGS.join(' ')} bin/mailroom.js serve\` (npm start does; see docs/operations.md)`);
  if (running.sandboxDns !== null) {
    const { sandboxLines } = await import('../main.js');
    const lines = sandboxLines(running.sandboxDns);
    const rule = '='.repeat(Math.max(...lines.map((line) => line.length)));
    process.stderr.write(`${[rule, ...lines, rule].join('\n')}\n`);
  }
  stopOnSignals(running, logger, config.shutdownTimeoutMs);
}

/** Stop on SIGTERM or SIGINT; past `timeoutMs` (MAILROOM_SHUTDOWN_TIMEOUT_MS) exit anyway, with a line saying so. */
function stopOnSignals(running: RunningService, logger: Logger, timeoutMs: number): void {
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal, timeout_ms: timeoutMs }, 'shutting down');
    const force = setTimeout(() => {
      logger.error({ timeout_ms: timeoutMs }, 'shutdown took too long; exiting');
      process.exit(1);
    }, timeoutMs);
    force.unref();
    running.stop().then(
      () => {
        logger.info('stopped');
        process.exit(0);
      },
      (err: unknown) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

export function buildProgram(): Command {
  const program = new Command('mailroom')
    .description('Mailroom: multi-tenant mail service — the server, its operator commands, and a client for the session API')
    .showHelpAfterError()
    .configureOutput({ outputError: (text, write) => write(text) })
    .addHelpText(
      'after',
      [
        '\nExamples:',
        '  $ mailroom serve',
        '  $ mailroom login --server http://127.0.0.1:8080 --email owner@example.com',
        '  $ mailroom messages --unread',
        '  $ mailroom help messages',
      ].join('\n'),
    );

  program.commandsGroup('Server and operator commands:');
  program
    .command('serve')
    .description('run the service (all roles in one process unless --role is given)')
    .option('--role <roles>', `role(s) to run: ${ROLES.join(', ')} (repeat or comma-separate)`, parseRoles)
    .option('--sandbox', 'try everything on one machine: a DNS server of its own, outbound mail captured, loopback webhooks, catch-alls (see mailroom help sandbox)')
    .addHelpText('after', '\nExamples:\n  $ mailroom serve\n  $ mailroom serve --sandbox\n  $ MAILROOM_DATABASE_URL=postgres://localhost/mailroom mailroom serve --role api --role worker')
    .action((opts: { role?: ProcessRole[]; sandbox?: boolean }) => serve(opts.role ?? [...ROLES], opts.sandbox === true));

  program
    .command('migrate')
    .description('apply pending database migrations (start-up does this too)')
    .option('--json', 'print JSON')
    .addHelpText('after', '\nExample:\n  $ MAILROOM_DATABASE_URL=postgres://localhost/mailroom mailroom migrate')
    .action(async (opts: { json?: boolean }) => {
      try {
        const [{ loadConfig }, { createDb }, { migrateToLatest }] = await Promise.all([import('../config/config.js'), import('../db/database.js'), import('../db/migrator.js')]);
        const config = loadConfig();
        const database = createDb(config.databaseUrl, { pgPrepare: config.pgPrepare });
        try {
          const applied = await migrateToLatest(database.db);
          printResult({ ok: true, applied }, opts.json === true, [
            applied.length === 0 ? 'database is up to date' : `applied ${applied.length} migration(s):\n  ${applied.join('\n  ')}`,
          ]);
        } finally {
          await database.destroy();
        }
      } catch (err) {
        failWith(err);
      }
    });

  registerAdminCommands(program);
  registerClientCommands(program);
  registerHelpCommand(program);
  return program;
}

/**
 * `mailroom help messages reply`: the help of a command at any depth. Commander's own help command reads one name
 * (`help messages reply` showed the group's help); a command named `help` takes its place.
 */
function registerHelpCommand(program: Command): void {
  program
    .command('help [command...]')
    .description('display help for command')
    .helpGroup('Commands:')
    .addHelpText('after', '\nExamples:\n  $ mailroom help messages\n  $ mailroom help messages reply')
    .action((names: string[]) => {
      let target = program;
      for (const [i, name] of names.entries()) {
        const next = target.commands.find((c) => c.name() === name || c.aliases().includes(name));
        if (!next) {
          const parent = ['mailroom', ...names.slice(0, i)].join(' ');
          process.stderr.write(`error: unknown command '${name}' (${parent} --help lists them)\n`);
          process.exitCode = 1;
          return;
        }
        target = next;
      }
      target.help();
    });
}

export async function main(argv: string[]): Promise<void> {
  await buildProgram().parseAsync(argv);
}

import { Option, type Command } from 'commander';
import { readConfig, writeConfig, type ClientConfig } from './config-store.js';
import { ApiError, CliError, Interrupted } from './errors.js';
import { colourWanted, createStyle, type Style } from './format.js';
import { createApiClient, DEFAULT_SERVER, normaliseServer, type ApiClient } from './http-client.js';

/** Options every client command takes. */
export interface CommonOptions {
  json?: boolean;
  server?: string;
}

/** What a client command works with: where to send requests, how to print, the stored login. */
export interface Context {
  readonly json: boolean;
  readonly server: string;
  readonly style: Style;
  readonly config: ClientConfig;
  /** A client with the stored session for `server`; fails with "not logged in" when there is none. */
  api(): ApiClient;
  /** A client that sends no credential (login). */
  anonymous(): ApiClient;
  saveConfig(config: ClientConfig): void;
  /** `--json`: the value as one line of JSON; otherwise the lines `human` gives. */
  show(value: unknown, human: () => string[]): void;
}

/**
 * The server to talk to: `--server`, else `MAILROOM_SERVER`, else the server of the stored login, else
 * the default listener.
 */
export function resolveServer(option: string | undefined, env: Record<string, string | undefined>, config: ClientConfig): string {
  if (option !== undefined) return normaliseServer(option, '--server');
  if (env.MAILROOM_SERVER) return normaliseServer(env.MAILROOM_SERVER, 'MAILROOM_SERVER');
  return config.server ?? DEFAULT_SERVER;
}

function createContext(options: CommonOptions): Context {
  const config = readConfig();
  const server = resolveServer(options.server, process.env, config);
  const style = createStyle(colourWanted(process.stdout));
  return {
    json: options.json === true,
    server,
    style,
    config,
    api() {
      // The token goes only to the server it came from: another --server gets no credential of ours.
      if (config.session && config.server === server) return createApiClient(server, config.session.token);
      const login = server === DEFAULT_SERVER ? 'mailroom login' : `mailroom login --server ${server}`;
      if (config.session && config.server) throw new CliError(`not logged in to ${server} (the stored session is for ${config.server}) — run ${login}`);
      throw new CliError(`not logged in — run ${login}`);
    },
    anonymous: () => createApiClient(server, null),
    saveConfig: (next) => writeConfig(next),
    show(value, human) {
      const text = options.json === true ? JSON.stringify(value) : human().join('\n');
      process.stdout.write(`${text}\n`);
    },
  };
}

/** What to add to a refusal so the next step is clear. */
function hint(err: ApiError): string {
  if (err.status === 401 && err.code !== 'invalid_credentials') return ' — run mailroom login';
  if (err.code === 'no_active_workspace') return ' — run mailroom workspaces use <workspace>';
  return '';
}

/** One line on stderr for any failure; a stack trace only when MAILROOM_DEBUG is set. */
export function reportError(err: unknown): number {
  if (err instanceof Interrupted) return 130;
  const style = createStyle(colourWanted(process.stderr));
  let message: string;
  if (err instanceof ApiError) message = `${err.status} ${err.code}: ${err.detail}${hint(err)}`;
  else if (err instanceof Error) message = err.message;
  else message = String(err);
  process.stderr.write(`${style.red('error:')} ${message.split('\n').map((line) => line.trim()).filter((line) => line !== '').join(' ')}\n`);
  if (process.env.MAILROOM_DEBUG && err instanceof Error && !(err instanceof CliError) && !(err instanceof ApiError)) {
    process.stderr.write(`${err.stack ?? ''}\n`);
  }
  return 1;
}

export interface CommandSpec {
  /** The name and arguments, commander style: `show <message_id>`. */
  name: string;
  description: string;
  /** Shown under `--help`; every client command has at least one. */
  examples: readonly [string, ...string[]];
  /** Run this subcommand when the group is called alone (`mailroom messages` = `mailroom messages list`). */
  isDefault?: boolean;
  alias?: string;
}

function examplesText(examples: readonly string[]): string {
  return `\nExample${examples.length > 1 ? 's' : ''}:\n${examples.map((e) => `  $ ${e}`).join('\n')}`;
}

/** A group of commands (`messages`, `drafts` …) with its help example. */
export function group(parent: Command, name: string, description: string, examples: readonly [string, ...string[]]): Command {
  return parent.command(name).description(description).addHelpText('after', examplesText(examples));
}

/** A client command with `--json`, `--server` and its examples; add options, then `.action(run(…))`. */
export function leaf(parent: Command, spec: CommandSpec): Command {
  const command = parent.command(spec.name, spec.isDefault ? { isDefault: true } : {}).description(spec.description);
  if (spec.alias) command.alias(spec.alias);
  command.addOption(new Option('--json', "print the server's JSON answer (one line), for scripts").helpGroup('Common options:'));
  command.addOption(new Option('--server <url>', `the Mailroom server (default: $MAILROOM_SERVER, else the one logged in to, else ${DEFAULT_SERVER})`).helpGroup('Common options:'));
  return command.addHelpText('after', examplesText(spec.examples));
}

/**
 * The action of a client command: builds the context, runs the handler with the positional arguments and
 * the options, and turns any failure into one line and a non-zero exit status.
 */
export function run<Options extends object>(handler: (ctx: Context, args: readonly (string | undefined)[], options: Options & CommonOptions) => Promise<void>) {
  return async (...params: unknown[]): Promise<void> => {
    const command = params[params.length - 1] as Command;
    const options = command.opts<Options & CommonOptions>();
    // Commander passes each declared argument (undefined when an optional one is absent; a variadic one as a list,
    // which is given here as its words joined by spaces), the options, the command.
    const args = params.slice(0, -2).map((value) => (typeof value === 'string' ? value : Array.isArray(value) ? value.join(' ') : undefined));
    try {
      await handler(createContext(options), args, options);
    } catch (err) {
      process.exitCode = reportError(err);
    }
  };
}

import { pino, type DestinationStream, type Logger, type LevelWithSilent, type LoggerOptions } from 'pino';

export type { Logger };

/** How log lines are written: `json` lines for machines, `pretty` lines for a person at a terminal. */
export type LogFormat = 'json' | 'pretty';
/** `auto` (the default) is `pretty` when standard output is a terminal and `json` otherwise. */
export type LogFormatSetting = LogFormat | 'auto';

function loggerOptions(level: LevelWithSilent, name: string): LoggerOptions {
  return {
    name,
    level,
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers["x-service-session"]',
        'password',
        '*.password',
      ],
      censor: '[redacted]',
    },
  };
}

/** JSON-lines logger (pino), to standard output unless another destination is given. */
export function createLogger(level: LevelWithSilent, name = 'mailroom', destination?: DestinationStream): Logger {
  const options = loggerOptions(level, name);
  return destination ? pino(options, destination) : pino(options);
}

/** A person reading a terminal gets pretty lines; a pipe, a file or a log collector gets JSON lines. */
export function chooseLogFormat(setting: LogFormatSetting, stdoutIsTTY: boolean): LogFormat {
  if (setting !== 'auto') return setting;
  return stdoutIsTTY ? 'pretty' : 'json';
}

/**
 * The logger of a long-running process (`mailroom serve`). pino-pretty is imported only when its format is chosen,
 * so a JSON run never pays for loading it; it formats on this thread and writes synchronously, so the last lines
 * before `process.exit` are never lost.
 */
export async function createProcessLogger(
  level: LevelWithSilent,
  setting: LogFormatSetting,
  stdoutIsTTY = process.stdout.isTTY === true,
): Promise<Logger> {
  if (chooseLogFormat(setting, stdoutIsTTY) === 'json') return createLogger(level);
  const { default: pretty } = await import('pino-pretty');
  return createLogger(level, 'mailroom', pretty({
    sync: true,
    colorize: stdoutIsTTY,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname,name',
    singleLine: true,
  }));
}

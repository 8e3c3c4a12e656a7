import { pino, type Logger, type LevelWithSilent } from 'pino';

export type { Logger };

/** JSON-lines logger (pino) for every long-running process. */
export function createLogger(level: LevelWithSilent, name = 'mailroom'): Logger {
  return pino({
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
  });
}

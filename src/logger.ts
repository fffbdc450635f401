import pino from 'pino';

export type Logger = pino.Logger;

/** JSON lines on stdout. Credentials are redacted wherever they might appear. */
export function createLogger(level: string): Logger {
  return pino({
    level,
    base: undefined,
    redact: {
      paths: ['req.headers.authorization', 'headers.authorization', 'authorization', 'token', '*.token'],
      censor: '[redacted]',
    },
  });
}

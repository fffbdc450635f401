import pino from 'pino';

export type Logger = pino.Logger;

/** The message of the one line written per request (src/http/request-log.ts). */
export const REQUEST_LINE = 'request';

/**
 * JSON lines on stdout, credentials redacted wherever they might appear. Request lines are
 * written in blocks of about 4 KB (or after 100 ms), a write per line being a cost per request;
 * every other line at once; what is still buffered, when the process exits.
 */
export function createLogger(level: string): Logger {
  const stdout = pino.destination({ dest: 1, sync: false, minLength: 4096, periodicFlush: 100 });
  return pino(
    {
      level,
      base: undefined,
      redact: {
        paths: ['req.headers.authorization', 'headers.authorization', 'authorization', 'token', '*.token'],
        censor: '[redacted]',
      },
      hooks: {
        logMethod(args, write) {
          write.apply(this, args);
          if (args[1] !== REQUEST_LINE) stdout.flush();
        },
      },
    },
    stdout,
  );
}

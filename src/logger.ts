import pino from 'pino';

export type Logger = pino.Logger;

/** The message of the one line written per request (src/http/request-log.ts). */
export const REQUEST_LINE = 'request';

/**
 * How lines are written: `json`, one JSON object a line, what log collectors read; `pretty`,
 * lines for a person (`npm run dev`), through pino-pretty, a devDependency.
 */
export type LogFormat = 'json' | 'pretty';

/**
 * Lines on stdout, credentials redacted wherever they might appear. As JSON, request lines are
 * written in blocks of about 4 KB (or after 100 ms), a write per line being a cost per request;
 * every other line at once; what is still buffered, when the process exits. Pretty lines are made
 * in pino's transport thread (pino flushes it when the process exits).
 */
export function createLogger(level: string, format: LogFormat = 'json'): Logger {
  const options: pino.LoggerOptions = {
    level,
    base: undefined,
    redact: {
      paths: ['req.headers.authorization', 'headers.authorization', 'authorization', 'token', '*.token'],
      censor: '[redacted]',
    },
  };
  if (format === 'pretty') {
    return pino({
      ...options,
      transport: {
        target: 'pino-pretty',
        options: { translateTime: 'SYS:standard', colorize: Boolean(process.stdout.isTTY), destination: 1 },
      },
    });
  }
  const stdout = pino.destination({ dest: 1, sync: false, minLength: 4096, periodicFlush: 100 });
  return pino(
    {
      ...options,
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

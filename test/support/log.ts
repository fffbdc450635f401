import { Writable } from 'node:stream';
import pino from 'pino';

export interface LogLine {
  level: number;
  msg: string;
  code?: string;
  requestId?: string;
  /** A request line's path. */
  path?: string;
  pool?: string;
  /** A message, or an Error as pino writes it. */
  err?: string | { message: string };
}

/** A logger for an in-process service that keeps every line it logs, parsed, in `lines`. */
export function capturedLog(): { lines: LogLine[]; logger: pino.Logger } {
  const lines: LogLine[] = [];
  const capture = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line) as LogLine);
      done();
    },
  });
  return { lines, logger: pino({ level: 'debug' }, capture) };
}

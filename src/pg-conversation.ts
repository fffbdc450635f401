/**
 * What a PostgreSQL server may say next on one connection, from what the client has sent it (the
 * protocol's message flow, PostgreSQL's "Frontend/Backend Protocol", 55.2): each message the
 * client sends is answered by a known sequence of messages, in order, and each ReadyForQuery ends
 * the answer to one Sync or one simple Query.
 *
 * pg trusts the order: it hands every DataRow and CommandComplete to the query it runs now, and
 * takes any ReadyForQuery as that query's end. One stray message (a ReadyForQuery injected into
 * the stream, a DataRow of another statement) then shifts every answer after it onto the next
 * query: a create answered with another request's bike (issue 37). `hear` names any message the
 * flow does not allow, so that the connection is closed before pg acts on it.
 */

/** A message of the extended protocol, or a simple Query, that the server answers. */
type Step =
  | { kind: 'parse' | 'bind' | 'close' | 'sync' }
  | { kind: 'describe'; portal: boolean; parameters: boolean }
  | { kind: 'execute'; rows: number; copying: boolean }
  | { kind: 'query'; result: Result | undefined; answered: boolean; copying: boolean };

/** A result of a simple Query under way: its columns (RowDescription) and the rows that came. */
interface Result {
  columns: number;
  rows: number;
}

/** What the client sends that the server answers (pg's Connection methods of the same names). */
type Sent = 'parse' | 'bind' | 'describePortal' | 'describeStatement' | 'execute' | 'close' | 'sync' | 'query';

/** A message from the server, as pg-protocol parses it: its name, and a few fields. */
export interface Heard {
  name: string;
  fieldCount?: number;
  text?: string;
}

/** Messages the server may send at any time (55.2.7, asynchronous operations). */
const ANY_TIME = new Set(['notice', 'parameterStatus', 'notification']);

/** Messages of the start-up phase, until its ReadyForQuery (55.2.1, 55.2.2). */
const STARTUP = new Set([
  'authenticationOk',
  'authenticationCleartextPassword',
  'authenticationMD5Password',
  'authenticationSASL',
  'authenticationSASLContinue',
  'authenticationSASLFinal',
  'backendKeyData',
  'error',
]);

/**
 * The number of rows a CommandComplete's tag reports for a command that returns them: "SELECT 3",
 * "INSERT 0 1" (its RETURNING rows), "UPDATE 2", "DELETE 1", "MERGE 1", "FETCH 5". Undefined for
 * a tag that counts none ("SHOW", "CALL").
 */
function rowsInTag(tag: string | undefined): number | undefined {
  const match = /^(?:SELECT|UPDATE|DELETE|MERGE|FETCH|INSERT \d+) (\d+)$/.exec(tag ?? '');
  return match ? Number(match[1]) : undefined;
}

export interface Conversation {
  /** The client sent `message`: its answer is expected, after those of what was sent before. */
  sent(message: Sent): void;
  /** Why `message`, just received, is not what the server may say now; undefined when it is. */
  hear(message: Heard): string | undefined;
}

export function conversation(): Conversation {
  let started = false;
  const steps: Step[] = [];
  /** The columns of the rows the unnamed portal returns, as its Describe said (0: none). */
  let portalColumns: number | undefined;
  /** The portal was suspended (a row limit): a CommandComplete then counts only the last Execute's rows. */
  let suspended = false;

  const rowsMatch = (columns: number | undefined, message: Heard) =>
    columns !== undefined && columns > 0 && message.fieldCount === columns;
  const countMatches = (rows: number, tag: string | undefined) => {
    const reported = rowsInTag(tag);
    return reported === undefined || reported === rows;
  };

  /** `message` in answer to `step`, the first unanswered one: whether it is allowed, and whether it ends the step. */
  const answer = (step: Step, message: Heard): 'next' | 'done' | undefined => {
    switch (step.kind) {
      case 'parse':
        return message.name === 'parseComplete' ? 'done' : undefined;
      case 'bind':
        return message.name === 'bindComplete' ? 'done' : undefined;
      case 'close':
        return message.name === 'closeComplete' ? 'done' : undefined;
      case 'sync':
        return message.name === 'readyForQuery' ? 'done' : undefined;
      case 'describe':
        if (message.name === 'parameterDescription' && !step.portal && !step.parameters) {
          step.parameters = true;
          return 'next';
        }
        if (message.name === 'rowDescription' || message.name === 'noData') {
          if (!step.portal && !step.parameters) return undefined;
          portalColumns = message.name === 'rowDescription' ? (message.fieldCount ?? 0) : 0;
          return 'done';
        }
        return undefined;
      case 'execute':
        if (step.copying) return copyMessage(message, step);
        switch (message.name) {
          case 'dataRow':
            if (!rowsMatch(portalColumns, message)) return undefined;
            step.rows++;
            return 'next';
          case 'commandComplete':
            // A command that returns no rows (NoData) reports in its tag the rows it changed.
            return suspended || !portalColumns || countMatches(step.rows, message.text) ? 'done' : undefined;
          case 'portalSuspended':
            suspended = true;
            return 'done';
          case 'emptyQuery':
            return step.rows === 0 ? 'done' : undefined;
          case 'copyInResponse':
          case 'copyOutResponse':
            step.copying = true;
            return 'next';
        }
        return undefined;
      case 'query':
        if (step.copying) return copyMessage(message, step);
        switch (message.name) {
          case 'rowDescription':
            if (step.result) return undefined;
            step.result = { columns: message.fieldCount ?? 0, rows: 0 };
            return 'next';
          case 'dataRow':
            if (!step.result || !rowsMatch(step.result.columns, message)) return undefined;
            step.result.rows++;
            return 'next';
          case 'commandComplete':
            if (step.result && !countMatches(step.result.rows, message.text)) return undefined;
            step.result = undefined;
            step.answered = true;
            return 'next';
          case 'emptyQuery':
            if (step.result) return undefined;
            step.answered = true;
            return 'next';
          case 'copyInResponse':
          case 'copyOutResponse':
            if (step.result) return undefined;
            step.copying = true;
            return 'next';
          case 'readyForQuery':
            // The end of a simple Query's answer, once each of its results has ended.
            return step.answered && !step.result ? 'done' : undefined;
        }
        return undefined;
    }
  };

  /** During COPY: its data, its end, then the command's completion (the client's CopyFail is answered by an error). */
  const copyMessage = (
    message: Heard,
    step: Extract<Step, { kind: 'execute' | 'query' }>,
  ): 'next' | 'done' | undefined => {
    if (message.name === 'copyData' || message.name === 'copyDone') return 'next';
    if (message.name !== 'commandComplete') return undefined;
    step.copying = false;
    if (step.kind === 'execute') return 'done';
    step.answered = true;
    return 'next';
  };

  /**
   * An ErrorResponse: the server skips the rest of what it was sent up to the next Sync (extended
   * protocol), or ends a simple Query's answer; its ReadyForQuery follows. Idle, it is a FATAL
   * one (an administrator's, a shutdown), and the server closes the connection.
   */
  const failed = (): boolean => {
    const first = steps[0];
    if (!first) return true;
    if (first.kind === 'query') {
      first.result = undefined;
      first.copying = false;
      first.answered = true;
      return true;
    }
    const sync = steps.findIndex((step) => step.kind === 'sync');
    if (sync < 0) return false;
    steps.splice(0, sync);
    return true;
  };

  return {
    sent(message) {
      switch (message) {
        case 'describePortal':
        case 'describeStatement':
          steps.push({ kind: 'describe', portal: message === 'describePortal', parameters: false });
          return;
        case 'execute':
          steps.push({ kind: 'execute', rows: 0, copying: false });
          return;
        case 'query':
          steps.push({ kind: 'query', result: undefined, answered: false, copying: false });
          return;
        default:
          steps.push({ kind: message });
      }
    },
    hear(message) {
      if (ANY_TIME.has(message.name)) return undefined;
      if (!started) {
        if (message.name === 'readyForQuery') started = true;
        else if (!STARTUP.has(message.name)) return `it sent ${message.name} before the connection was ready`;
        return undefined;
      }
      if (message.name === 'error') {
        return failed() ? undefined : 'it sent an error where no Sync follows';
      }
      const step = steps[0];
      if (!step) return `it sent ${message.name} while the connection was idle`;
      const verdict = answer(step, message);
      if (!verdict) return `it sent ${message.name} in answer to ${step.kind}, which does not allow it there`;
      if (verdict === 'done') {
        steps.shift();
        if (step.kind === 'sync' || step.kind === 'query') {
          portalColumns = undefined;
          suspended = false;
        }
      }
      return undefined;
    },
  };
}

import http from 'node:http';

/**
 * A client of Server-Sent Events for the tests, reading as an EventSource does (the HTML
 * standard's parsing of `text/event-stream`), and keeping everything it read: the events, the
 * comments and the `retry:` values, in order.
 */

interface ServerSentEvent {
  /** The last event id as of this event (an `id:` line sets it). */
  id: string;
  /** The event's type: `message` unless an `event:` line said otherwise. */
  type: string;
  data: string;
}

/** What a reader of `text/event-stream` has read so far: the events, the comments and the `retry:` values. */
interface EventStreamText {
  events: ServerSentEvent[];
  comments: string[];
  retries: number[];
}

export interface EventStream extends EventStreamText {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** Everything received, as text (a short error answer's body). */
  text(): string;
  /** Settles once the server has ended the answer, or the connection is gone. */
  ended: Promise<void>;
  /** Once ended: whether the server ended the answer (its last chunk came), rather than the connection being cut. */
  whole(): boolean;
  /** Closes the connection, as a client that leaves. */
  close(): void;
}

/**
 * A parser of `text/event-stream` as an EventSource parses it (the HTML standard's rules): fed the
 * text in pieces as it comes, it keeps each event once the blank line that ends it has come.
 */
export function eventStreamReader(): EventStreamText & { read(chunk: string): void } {
  const read: EventStreamText = { events: [], comments: [], retries: [] };
  let partial = '';
  let lastId = '';
  let type = '';
  let data: string[] = [];
  const line = (text: string) => {
    if (text === '') {
      if (data.length > 0) read.events.push({ id: lastId, type: type || 'message', data: data.join('\n') });
      data = [];
      type = '';
      return;
    }
    if (text.startsWith(':')) return void read.comments.push(text.slice(1).trim());
    const colon = text.indexOf(':');
    const field = colon < 0 ? text : text.slice(0, colon);
    const value = colon < 0 ? '' : text.slice(colon + 1).replace(/^ /, '');
    if (field === 'data') data.push(value);
    else if (field === 'id') lastId = value;
    else if (field === 'event') type = value;
    else if (field === 'retry' && /^\d+$/.test(value)) read.retries.push(Number(value));
  };
  return {
    ...read,
    read(chunk) {
      const lines = (partial + chunk).split(/\r\n|\r|\n/);
      partial = lines.pop() ?? '';
      lines.forEach(line);
    },
  };
}

/** Opens `url` asking for an event stream; resolves once the answer's head has come. */
export function openEventStream(
  url: string,
  { headers = {}, method = 'GET' }: { headers?: Record<string, string>; method?: string } = {},
): Promise<EventStream> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers: { accept: 'text/event-stream', ...headers } }, (res) => {
      res.setEncoding('utf8');
      const reader = eventStreamReader();
      let received = '';
      const stream: EventStream = {
        status: res.statusCode ?? 0,
        headers: res.headers,
        events: reader.events,
        comments: reader.comments,
        retries: reader.retries,
        text: () => received,
        ended: new Promise((done) => res.once('close', () => done())),
        whole: () => res.complete,
        close: () => req.destroy(),
      };
      res.on('data', (chunk: string) => {
        received += chunk;
        reader.read(chunk);
      });
      res.on('error', () => undefined);
      resolve(stream);
    });
    req.on('error', reject);
    req.end();
  });
}

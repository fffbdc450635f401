import 'pg';

declare module 'pg' {
  interface ClientBase {
    /** The server's BackendKeyData, which a CancelRequest names: pg keeps it, its types omit it. */
    processID: number | null;
    secretKey: number | null;
    host: string;
    port: number;
  }
}

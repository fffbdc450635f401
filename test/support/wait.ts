/**
 * How long a test waits for what the service does by itself, at once or in a moment (a line
 * logged, a connection back in its pool, a change on a stream, a server up), before it fails and
 * says what it waited for. Only a guard against waiting forever: far longer than any loaded
 * machine takes, so it never measures how fast this one is. Jest's own time limit for a test
 * (testTimeout in the jest configurations) is longer still.
 */
export const PATIENCE_MS = 300_000;

/** Polls `probe` every `everyMs` until it returns a value, or fails after PATIENCE_MS. */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
  { everyMs = 50 }: { everyMs?: number } = {},
): Promise<T> {
  const deadline = Date.now() + PATIENCE_MS;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`waited ${PATIENCE_MS} ms for ${what} in vain`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/**
 * The limits count in windows of a minute from the minute's start (src/db/rate-limits.ts): a test
 * that counts up to a limit begins with 10 s of a window left at least, so that its requests fall
 * in one window, however loaded the machine.
 */
export async function inOneWindow(): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < 10_000) await new Promise((resolve) => setTimeout(resolve, left + 100));
}

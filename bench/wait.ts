/**
 * The benchmarks' one way to wait for something the service does (a job to end, executions to
 * end, a first admission): poll, say where it stands every `sayEveryMs` while it is not there
 * yet, and give up after `capMs` with an error naming what it waited for and where it stood.
 * A figure on a machine that never gets there fails in minutes, with a reason, instead of
 * holding `npm run bench` silently.
 */
export interface WaitOptions {
  /** how often to read (default 250 ms) */
  everyMs?: number;
  /** give up after this long (default 15 minutes) */
  capMs?: number;
  /** where a progress line goes (none by default) */
  say?: (line: string) => void;
  /** how often to say it (default 15 s) */
  sayEveryMs?: number;
  /** the clock and the pause, for the unit test */
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

export async function waitFor<T>(
  what: string,
  read: () => Promise<T>,
  done: (value: T) => boolean,
  describe: (value: T) => string,
  options: WaitOptions = {},
): Promise<T> {
  const { everyMs = 250, capMs = 15 * 60_000, say, sayEveryMs = 15_000 } = options;
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const started = now();
  let saidAt = started;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    const waited = now() - started;
    if (waited >= capMs) throw new Error(`gave up waiting for ${what} after ${Math.round(waited / 1000)} s: ${describe(value)}`);
    if (say && now() - saidAt >= sayEveryMs) {
      saidAt = now();
      say(`still waiting for ${what} (${Math.round(waited / 1000)} s): ${describe(value)}`);
    }
    await sleep(everyMs);
  }
}

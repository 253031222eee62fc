/**
 * Waiting on events, never on time: `until` polls a condition, `retryUntilSuccess` retries
 * an assertion until it holds, and a `Latch` is opened by the code under test and awaited
 * by the test. Each fails naming what it waited for, after a generous bound (the machine
 * running CI is loaded; the bound only stops a hang, it asserts nothing about speed), which
 * the machine's time scale stretches (./time-scale.ts).
 */
import { scaled } from './time-scale';

/** Polls `check` every 50 ms until it holds; fails naming `what` after `timeoutMs`. */
export async function until(check: () => Promise<boolean> | boolean, cap: number, what: string): Promise<void> {
  const timeoutMs = scaled(cap);
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Runs `attempt` until it stops throwing (an `expect` that will hold soon) and returns its value; rethrows the last failure after `timeoutMs`. */
export async function retryUntilSuccess<T>(attempt: () => Promise<T> | T, cap = 30_000): Promise<T> {
  const deadline = Date.now() + scaled(cap);
  for (;;) {
    try {
      return await attempt();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

/**
 * A one-shot event between the code under test and the test: `open()` from an operator or
 * a hook, `wait()` in the test. Opening twice is harmless; `opened` says whether it was.
 */
export class Latch<T = void> {
  opened = false;
  private value?: T;
  private readonly waiters: ((value: T) => void)[] = [];

  open(value?: T): void {
    if (this.opened) return;
    this.opened = true;
    this.value = value as T;
    for (const resolve of this.waiters.splice(0)) resolve(this.value);
  }

  wait(cap = 30_000, what = 'the latch'): Promise<T> {
    if (this.opened) return Promise.resolve(this.value as T);
    const timeoutMs = scaled(cap);
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)), timeoutMs);
      this.waiters.push((value) => {
        clearTimeout(timer);
        resolve(value);
      });
    });
  }
}

/**
 * Latches by key (an execution id, say): an operator waits on its gate, the test opens it.
 * A gate opened before anyone waits stays open.
 */
export class Gates {
  private readonly latches = new Map<string, Latch>();

  private latch(key: string): Latch {
    let latch = this.latches.get(key);
    if (!latch) this.latches.set(key, (latch = new Latch()));
    return latch;
  }

  open(key: string): void {
    this.latch(key).open();
  }

  /** Resolves when the gate opens, or when `signal` aborts (a step's deadline or a cancelled activity). */
  wait(key: string, signal?: AbortSignal): Promise<void> {
    const opened = this.latch(key).wait(24 * 3600_000, `gate ${key}`);
    if (!signal) return opened;
    return Promise.race([
      opened,
      new Promise<void>((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true }))),
    ]);
  }

  /** Opens every gate (end of a test file: nothing stays blocked). */
  openAll(): void {
    for (const latch of this.latches.values()) latch.open();
  }
}

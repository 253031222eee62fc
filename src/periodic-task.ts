/**
 * A background loop: run `task` every `intervalMs` (waiting for one pass to finish before
 * scheduling the next), log a failed pass without stopping, run a pass soon on `kick()`,
 * and on `stop()` wait for the pass in progress. A pass may answer `{ nextInMs }` to have
 * the next one sooner (retention while it is behind). The sweeper, the checkpoint publisher,
 * the DLQ relay and retention are each one of these.
 */
import { errorMessage } from './errors';
import type { Log } from './log';

/** What a pass may answer: run the next pass this soon instead of one interval after this one ended. */
export interface NextPass {
  nextInMs: number;
}

const isNextPass = (value: unknown): value is NextPass => typeof (value as NextPass | undefined)?.nextInMs === 'number';

export class PeriodicTask {
  private timer?: NodeJS.Timeout;
  private running?: Promise<unknown>;
  private stopped = true;

  constructor(
    private readonly failureEvent: string,
    private readonly intervalMs: number,
    private readonly task: () => Promise<unknown>,
    private readonly log: Log,
  ) {}

  start(): void {
    this.stopped = false;
    this.schedule(this.intervalMs);
  }

  /** Run a pass now-ish, unless one is running (it will pick the new work up). */
  kick(): void {
    if (this.stopped || this.running) return;
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private schedule(delayMs: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.pass(), delayMs);
  }

  private pass(): void {
    let delayMs = this.intervalMs;
    this.running = this.task()
      .then((result) => {
        if (isNextPass(result)) delayMs = Math.max(0, Math.min(this.intervalMs, result.nextInMs));
      })
      .catch((err) => {
        this.log.warn({ event: this.failureEvent, error: errorMessage(err) });
      });
    void this.running.finally(() => {
      this.running = undefined;
      if (!this.stopped) this.schedule(delayMs);
    });
  }
}

/**
 * A background loop: run `task` every `intervalMs` (waiting for one pass to finish before
 * scheduling the next), log a failed pass without stopping, run a pass soon on `kick()`,
 * and on `stop()` wait for the pass in progress. The sweeper, the checkpoint publisher
 * and the DLQ relay are each one of these.
 */
import type { Log } from './log';

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
    this.running = this.task().catch((err) => {
      this.log.warn({ event: this.failureEvent, error: err instanceof Error ? err.message : String(err) });
    });
    void this.running.finally(() => {
      this.running = undefined;
      if (!this.stopped) this.schedule(this.intervalMs);
    });
  }
}

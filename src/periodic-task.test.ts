import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { PeriodicTask } from './periodic-task';
import { captureLog as capture } from '../test/helpers/log-capture';

/** A task whose passes the test ends one by one: each pass waits until `finish()` (or `fail()`) is called. */
function controlledTask() {
  const pending: { resolve: () => void; reject: (err: Error) => void }[] = [];
  let running = 0;
  let overlapped = false;
  const task = {
    passes: 0,
    get overlapped() {
      return overlapped;
    },
    run: () => {
      task.passes++;
      if (running++ > 0) overlapped = true;
      return new Promise<void>((resolve, reject) => pending.push({ resolve, reject })).finally(() => {
        running--;
      });
    },
    finish: () => pending.shift()!.resolve(),
    fail: (message: string) => pending.shift()!.reject(new Error(message)),
  };
  return task;
}

describe('PeriodicTask', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('runs a pass every interval, never two at once, and schedules the next only after a pass ends', async () => {
    const { log } = capture();
    const work = controlledTask();
    const loop = new PeriodicTask('demo_failed', 1000, work.run, log);
    loop.start();
    await vi.advanceTimersByTimeAsync(999);
    expect(work.passes).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(work.passes).toBe(1);
    // The pass is still running: however long it takes, no second one starts.
    await vi.advanceTimersByTimeAsync(10_000);
    expect(work.passes).toBe(1);
    work.finish();
    await vi.advanceTimersByTimeAsync(1000);
    expect(work.passes).toBe(2);
    expect(work.overlapped).toBe(false);
    work.finish();
    await loop.stop();
  });

  it('runs the next pass sooner when a pass answers nextInMs (never later than the interval)', async () => {
    const { log } = capture();
    const answers = [{ nextInMs: 300 }, { nextInMs: 50_000 }, undefined];
    let passes = 0;
    const loop = new PeriodicTask('demo_failed', 1000, async () => answers[passes++], log);
    loop.start();
    await vi.advanceTimersByTimeAsync(1000);
    expect(passes).toBe(1);
    await vi.advanceTimersByTimeAsync(299);
    expect(passes).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(passes).toBe(2);
    // Asked for later than the interval: one interval.
    await vi.advanceTimersByTimeAsync(1000);
    expect(passes).toBe(3);
    await loop.stop();
  });

  it('logs a failed pass once under its event and carries on', async () => {
    const { log, lines } = capture();
    const work = controlledTask();
    const loop = new PeriodicTask('demo_failed', 100, work.run, log);
    loop.start();
    await vi.advanceTimersByTimeAsync(100);
    work.fail('boom');
    await vi.advanceTimersByTimeAsync(100);
    expect(work.passes).toBe(2);
    expect(lines.filter((line) => line.event === 'demo_failed')).toEqual([expect.objectContaining({ error: 'boom' })]);
    work.finish();
    await loop.stop();
  });

  it('stop() waits for the pass in progress and no pass follows it', async () => {
    const { log } = capture();
    const work = controlledTask();
    const loop = new PeriodicTask('demo_failed', 100, work.run, log);
    loop.start();
    await vi.advanceTimersByTimeAsync(100);
    let stopped = false;
    const stopping = loop.stop().then(() => {
      stopped = true;
    });
    await vi.advanceTimersByTimeAsync(0);
    expect(stopped).toBe(false);
    work.finish();
    await stopping;
    await vi.advanceTimersByTimeAsync(10_000);
    expect(work.passes).toBe(1);
  });

  it('runs a pass right after kick() instead of waiting for the interval, and ignores a kick during a pass', async () => {
    const { log } = capture();
    const work = controlledTask();
    const loop = new PeriodicTask('x', 60_000, work.run, log);
    loop.start();
    loop.kick();
    await vi.advanceTimersByTimeAsync(0);
    expect(work.passes).toBe(1);
    loop.kick();
    await vi.advanceTimersByTimeAsync(0);
    expect(work.passes).toBe(1);
    work.finish();
    await loop.stop();
  });
});

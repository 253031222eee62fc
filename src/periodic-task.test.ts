import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLog } from './log';
import { PeriodicTask } from './periodic-task';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const log = createLog({ destination: new Writable({ write(chunk, _e, done) { lines.push(JSON.parse(chunk.toString())); done(); } }) });
  return { log, lines };
}
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('PeriodicTask', () => {
  it('runs passes one at a time, survives a failing pass, and stop() waits for the pass in progress', async () => {
    const { log, lines } = capture();
    let running = 0;
    let overlapped = false;
    let passes = 0;
    let finished = 0;
    const task = new PeriodicTask('demo_failed', 5, async () => {
      if (running++ > 0) overlapped = true;
      passes++;
      await sleep(15);
      running--;
      finished++;
      if (passes === 2) throw new Error('boom');
    }, log);
    task.start();
    await sleep(120);
    await task.stop();
    const atStop = passes;
    expect(finished).toBe(passes);
    await sleep(50);
    expect(passes).toBe(atStop);
    expect(passes).toBeGreaterThanOrEqual(3);
    expect(overlapped).toBe(false);
    expect(lines.filter((l) => l.event === 'demo_failed')).toHaveLength(1);
  });

  it('runs soon after kick() instead of waiting for the interval', async () => {
    const { log } = capture();
    let passes = 0;
    const task = new PeriodicTask('x', 10_000, async () => { passes++; }, log);
    task.start();
    task.kick();
    await sleep(30);
    expect(passes).toBe(1);
    await task.stop();
  });
});

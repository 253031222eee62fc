import { describe, expect, it } from 'vitest';
import { waitFor } from './wait';

/** A clock that only moves when the wait sleeps. */
function fakeClock() {
  let t = 0;
  return { now: () => t, sleep: async (ms: number) => void (t += ms) };
}

describe('waitFor (the benchmarks’ waits)', () => {
  it('returns the first value that is done, saying where it stands while it is not', async () => {
    const clock = fakeClock();
    const said: string[] = [];
    let open = 5;
    const value = await waitFor(
      'the runs to end',
      async () => open--,
      (n) => n === 0,
      (n) => `${n} still open`,
      {
        ...clock,
        everyMs: 10_000,
        sayEveryMs: 15_000,
        say: (line) => said.push(line),
      },
    );
    expect(value).toBe(0);
    expect(said).toEqual(['still waiting for the runs to end (20 s): 3 still open', 'still waiting for the runs to end (40 s): 1 still open']);
  });

  it('gives up after its cap, naming what it waited for and where it stood', async () => {
    const clock = fakeClock();
    let reads = 0;
    const waiting = waitFor(
      'job A to end',
      async () => ++reads,
      () => false,
      (n) => `read ${n} times`,
      { ...clock, everyMs: 1000, capMs: 5000 },
    );
    await expect(waiting).rejects.toThrow('gave up waiting for job A to end after 5 s: read 6 times');
  });
});

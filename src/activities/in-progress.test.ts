import { describe, expect, it } from 'vitest';
import { TransitionInProgressError } from '../transports/remote';
import { deliverWhileInProgress, InProgressBudgetExhaustedError, inProgressDelayMs, type InProgressPacing, type InProgressProgress } from './in-progress';

const inProgress = () => new TransitionInProgressError('REST', 'http://worker/transition', 'kit/1', 1000);

function pacing(overrides: Partial<InProgressPacing> = {}): InProgressPacing & { beats: InProgressProgress[] } {
  const beats: InProgressProgress[] = [];
  return {
    transitionKey: 'e-1:0:1',
    budgetMs: 250,
    callDeadlineMs: 100,
    hardStopAt: Date.now() + 60_000,
    resumed: undefined,
    heartbeat: (progress) => beats.push(progress),
    heartbeatEveryMs: 100,
    beats,
    ...overrides,
  };
}

describe('in-progress pacing', () => {
  it('doubles from 1 s to a 10 s cap, never below the worker’s Retry-After', () => {
    expect([1, 2, 3, 4, 5, 6].map((n) => inProgressDelayMs(n, null))).toEqual([1000, 2000, 4000, 8000, 10_000, 10_000]);
    expect(inProgressDelayMs(1, 3000)).toBe(3000);
  });

  it('asks again while the worker answers "in progress" and returns its answer, heartbeating the budget’s progress', async () => {
    let calls = 0;
    const options = pacing({ budgetMs: 5000 });
    const answer = await deliverWhileInProgress(async () => {
      if (++calls < 2) throw inProgress();
      return 'done';
    }, options);
    expect(answer).toBe('done');
    expect(calls).toBe(2);
    expect(options.beats[0]).toMatchObject({ transitionKey: 'e-1:0:1', answers: 1 });
  });

  it('ends with the evidence when the budget runs out, the last ask at the budget’s end', async () => {
    let calls = 0;
    const err = await deliverWhileInProgress(async () => {
      calls++;
      throw inProgress();
    }, pacing()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InProgressBudgetExhaustedError);
    expect(err).toMatchObject({
      protocol: 'REST',
      target: 'http://worker/transition',
      evidence: { state: 'IN_PROGRESS', answers: 2, budgetMs: 250, platform: 'kit/1' },
    });
    expect(calls).toBe(2);
  });

  it('goes on with the progress of an earlier attempt of the same identity, not of another', async () => {
    const resumed = { transitionKey: 'e-1:0:1', firstAt: Date.now() - 10_000, answers: 7 };
    const err = await deliverWhileInProgress(async () => {
      throw inProgress();
    }, pacing({ resumed })).catch((e: unknown) => e);
    expect(err).toMatchObject({ evidence: { answers: 8 } });
    const other = pacing({ resumed: { ...resumed, transitionKey: 'e-1:0:2' }, budgetMs: 60_000, hardStopAt: Date.now() + 1500 });
    await expect(deliverWhileInProgress(async () => Promise.reject(inProgress()), other)).rejects.toBeInstanceOf(TransitionInProgressError);
    expect(other.beats[0]).toMatchObject({ answers: 1 });
  });

  it('hands the answer to a Temporal retry when this attempt has no room left for another call', async () => {
    const err = await deliverWhileInProgress(async () => Promise.reject(inProgress()), pacing({ budgetMs: 60_000, hardStopAt: Date.now() + 1500 })).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(TransitionInProgressError);
  });

  it('rethrows any other failure at once', async () => {
    await expect(deliverWhileInProgress(async () => Promise.reject(new Error('boom')), pacing())).rejects.toThrow('boom');
  });
});

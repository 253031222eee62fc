import { describe, expect, it } from 'vitest';
import { compactPlan, planStep } from './plan';
import type { StepPlan } from './types';

const retry = { limit: 5, waitMs: 1000, maxBackoffMs: 30_000, jitter: true };
const step = (name: string, extra: Partial<StepPlan> = {}): StepPlan => ({
  name,
  transport: 'LOCAL',
  command: false,
  retry,
  timeoutMs: 300_000,
  heartbeatMs: 30_000,
  ...extra,
});

describe('compact step plan', () => {
  it('gives back every step whole, and writes shared settings once', () => {
    const plan = [step('a'), step('b', { command: true }), step('c', { transport: 'REST', timeoutMs: 30_000, retry: { ...retry, limit: 2 } }), step('d')];
    const run = compactPlan(plan);
    expect(plan.map((_, i) => planStep(run, i))).toEqual(plan);
    expect(run.steps).toEqual([
      { name: 'a' },
      { name: 'b', command: true },
      { name: 'c', transport: 'REST', timeoutMs: 30_000, retry: { ...retry, limit: 2 } },
      { name: 'd' },
    ]);
    expect(JSON.stringify(run).length).toBeLessThan(JSON.stringify({ steps: plan }).length);
    const uniform = ['a', 'b', 'c', 'd', 'e'].map((name) => step(name));
    expect(JSON.stringify(compactPlan(uniform)).length).toBeLessThan(JSON.stringify({ steps: uniform }).length / 3);
  });

  it('reads runs started before defaults existed (whole entries, no stepDefaults)', () => {
    const plan = [step('a'), step('b')];
    expect(planStep({ steps: plan }, 1)).toEqual(plan[1]);
  });

  it('keeps a setting some steps leave undefined out of the defaults (a LOCAL step has no in-progress budget)', () => {
    const plan = [
      step('call', { transport: 'REST', inProgressBudgetMs: 60_000 }),
      step('local'),
      step('call2', { transport: 'GRPC', inProgressBudgetMs: 60_000 }),
    ];
    const run = compactPlan(plan);
    expect(run.stepDefaults).not.toHaveProperty('inProgressBudgetMs');
    const whole = plan.map((_, i) => planStep(JSON.parse(JSON.stringify(run)), i));
    expect(whole).toEqual(plan);
    expect(whole[1].inProgressBudgetMs).toBeUndefined();
  });

  it('is empty for an empty plan', () => {
    expect(compactPlan([])).toEqual({ steps: [] });
  });
});

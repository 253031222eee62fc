import { describe, expect, it } from 'vitest';
import { loadConfig } from '../config/config';
import { definePipeline, functionStep, localStep, restStep } from './define';
import { diffDefinitions, PipelineRegistry } from './registry';

const config = loadConfig({}, { 'pipeline.auth.tokens': [] });
const op = () => null;
const v1 = definePipeline({ name: 'orders', steps: [localStep('a', op), localStep('b', op), localStep('c', op, { command: true })] });
const v2 = definePipeline({
  name: 'orders',
  version: 2,
  steps: [localStep('a', op), localStep('b', op), localStep('check', op), localStep('c', op, { command: true })],
});

describe('definePipeline versions', () => {
  it('defaults to version 1 and derives a fingerprint from names, transports, Command flags and order', () => {
    expect(v1.version).toBe(1);
    expect(v1.fingerprint).toMatch(/^[0-9a-f]{16}$/);
    const same = definePipeline({ name: 'orders', steps: [localStep('a', () => 1), localStep('b', () => 2), localStep('c', () => 3, { command: true })] });
    expect(same.fingerprint).toBe(v1.fingerprint);
    const notCommand = definePipeline({ name: 'orders', steps: [localStep('a', op), localStep('b', op), localStep('c', op)] });
    const reordered = definePipeline({ name: 'orders', steps: [localStep('b', op), localStep('a', op), localStep('c', op, { command: true })] });
    expect(new Set([v1.fingerprint, notCommand.fingerprint, reordered.fingerprint]).size).toBe(3);
  });

  it('rejects a version that is not a positive integer', () => {
    expect(() => definePipeline({ name: 'orders', version: 0, steps: [localStep('a', op)] })).toThrow(/version 0 must be a positive integer/);
    expect(() => definePipeline({ name: 'orders', version: 1.5, steps: [localStep('a', op)] })).toThrow(/positive integer/);
  });
});

describe('PipelineRegistry with several versions', () => {
  it('gives new executions the highest registered version and resolves a pinned step by name', () => {
    const registry = new PipelineRegistry(config, [v2, v1]);
    expect(registry.get('orders').version).toBe(2);
    expect(registry.versions('orders')).toEqual([1, 2]);
    const pinned = registry.resolve('orders', 1, 'c');
    expect(pinned.found && pinned.pipeline.version).toBe(1);
    expect(pinned.found && pinned.step).toBe(v1.steps[2]);
    expect(registry.plan(v1).map((step) => step.name)).toEqual(['a', 'b', 'c']);
  });

  it('keeps new executions on the previous version while the new one is marked newExecutions: false', () => {
    const staged = definePipeline({ name: 'orders', version: 2, newExecutions: false, steps: v2.steps });
    const registry = new PipelineRegistry(config, [v1, staged]);
    expect(registry.get('orders').version).toBe(1);
    expect(registry.resolve('orders', 2, 'check')).toMatchObject({ found: true });
    expect(new PipelineRegistry(config, [staged]).get('orders').version).toBe(2);
  });

  it('refuses the same version twice', () => {
    expect(() => new PipelineRegistry(config, [v1, v1])).toThrow(/version 1 is registered twice/);
  });

  it('tells a dropped version (gone) from one this worker does not have yet (behind)', () => {
    const registry = new PipelineRegistry(config, [v2]);
    expect(registry.resolve('orders', 1, 'c')).toMatchObject({ found: false, gone: true });
    expect(registry.resolve('orders', 2, 'nope')).toMatchObject({ found: false, gone: true });
    expect(registry.resolve('orders', 3, 'c')).toMatchObject({ found: false, gone: false });
    registry.unregister('orders', 2);
    expect(registry.has('orders')).toBe(false);
  });

  it('matches a pinned execution only to the shape it was admitted under', () => {
    const registry = new PipelineRegistry(config, [v1]);
    expect(registry.pinned('orders', 1, v1.fingerprint)).toBe(registry.find('orders', 1));
    expect(registry.pinned('orders', 1, null)).toBeDefined();
    expect(registry.pinned('orders', 1, 'ffffffffffffffff')).toBeUndefined();
  });
});

describe('diffDefinitions', () => {
  it('names the steps that moved, appeared and vanished', () => {
    const diff = diffDefinitions({ version: 1, steps: ['a', 'x', 'b', 'c'] }, { version: 2, steps: ['a', 'b', 'check', 'c', 'd'] });
    expect(diff.appeared).toEqual(['check', 'd']);
    expect(diff.vanished).toEqual(['x']);
    expect(diff.moved).toEqual([{ step: 'b', fromIndex: 2, toIndex: 1 }]);
  });
});

describe('the fast path in the plan', () => {
  const noop = () => null;
  const plan = (pipeline: ReturnType<typeof definePipeline>, overrides: Record<string, unknown> = {}) =>
    new PipelineRegistry(loadConfig({}, { 'pipeline.auth.tokens': [], ...overrides }), [pipeline]).plan(pipeline);

  it('takes in-process steps chosen by the step, else the pipeline, else the service, within the deadline bound', () => {
    const quick = definePipeline({
      name: 'quick',
      fastPath: true,
      steps: [
        localStep('a', noop),
        localStep('b', noop, { fastPath: false }),
        localStep('long', noop, { timeoutMs: 60_000 }),
        restStep('remote', { url: 'http://127.0.0.1:1/x' }),
        functionStep('fn', noop, { timeoutMs: 2_000 }),
      ],
    });
    expect(plan(quick).map((step) => [step.name, step.fastPath ?? false, step.timeoutMs])).toEqual([
      ['a', true, 10_000],
      ['b', false, 300_000],
      ['long', false, 60_000],
      ['remote', false, 30_000],
      ['fn', true, 2_000],
    ]);
    const plain = definePipeline({ name: 'plain', steps: [localStep('a', noop)] });
    expect(plan(plain)[0].fastPath).toBeUndefined();
    expect(plan(plain, { 'pipeline.orchestrator.fast-path': true })[0]).toMatchObject({ fastPath: true, timeoutMs: 10_000 });
    expect(plan(plain, { 'pipeline.orchestrator.fast-path': 'true', 'pipeline.orchestrator.fast-path.max-step-timeout': '2s' })[0]).toMatchObject({
      fastPath: true,
      timeoutMs: 2_000,
    });
  });
});

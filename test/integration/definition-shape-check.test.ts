/**
 * Start-up refuses a pipeline definition whose shape changed under the same version while
 * unfinished executions are pinned to the earlier shape (a ConfigError: `npm start` exits 2
 * with its message), naming the pipeline, the version and the count; with none pinned it
 * starts and logs `pipeline_definition_changed_without_version`.
 */
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors';
import { createLog } from '../../src/log';
import { definePipeline, functionStep, localStep, NonRetryableException } from '../../src/pipeline/define';
import { startService } from '../../src/runtime';
import { startTestEngine, type TestEngine } from '../helpers/engine';

const fail = () => {
  throw new NonRetryableException('declined', 'DECLINED');
};
const v1 = definePipeline({ name: 'ledger', version: 1, steps: [localStep('post', fail)] });
const v1Reshaped = definePipeline({ name: 'ledger', version: 1, steps: [localStep('check', () => null), localStep('post', fail)] });
const other = definePipeline({ name: 'notes', version: 4, steps: [localStep('a', () => null)] });
const otherReshaped = definePipeline({ name: 'notes', version: 4, steps: [localStep('a', () => null), localStep('b', () => null)] });
// Two steps, one FAILED execution pinned: the spread copy below reorders them under the same version.
const billing = definePipeline({ name: 'billing', version: 1, steps: [localStep('reserve', () => null), localStep('render', fail)] });
// One step that fails on request: a SUCCEEDED execution admitted first, a FAILED one after the mistaken start is undone.
const memo = definePipeline({
  name: 'memo',
  version: 1,
  steps: [localStep('write', (input: { fail?: boolean } | null) => (input?.fail ? fail() : null))],
});
const memoMistake = definePipeline({ name: 'memo', version: 1, steps: [localStep('write', () => null), localStep('send', () => null)] });
const memoLater = definePipeline({ name: 'memo', version: 1, steps: [localStep('send', () => null), localStep('write', () => null)] });

let engine: TestEngine;

beforeAll(async () => {
  engine = await startTestEngine([v1, other, billing, memo]);
  await engine.start('acme', { pipeline: 'ledger', executionId: 'pinned-1' });
  await engine.start('beta', { pipeline: 'ledger', executionId: 'pinned-2' });
  await engine.start('acme', { pipeline: 'billing', executionId: 'billing-1' });
  await engine.start('acme', { pipeline: 'memo', executionId: 'memo-1' });
  await engine.waitFor('acme', 'pinned-1', ['FAILED']);
  await engine.waitFor('beta', 'pinned-2', ['FAILED']);
  await engine.waitFor('acme', 'billing-1', ['FAILED']);
  await engine.waitFor('acme', 'memo-1', ['SUCCEEDED']);
});
afterAll(async () => engine?.stop());

/** A second service on the same store and Temporal, as a redeploy would start. */
function redeploy(pipelines: Parameters<typeof startService>[0]['pipelines'], lines: Record<string, unknown>[] = []) {
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return startService({ config: engine.service.config, log: createLog({ destination: sink }), pipelines, worker: false, http: false });
}

describe('start-up with a definition changed under its version', () => {
  it('refuses to start while unfinished executions are pinned to the earlier shape, naming pipeline, version and count', async () => {
    const refused = await redeploy([v1Reshaped, other]).then(
      async (service) => {
        await service.stop();
        return undefined;
      },
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(ConfigError);
    expect((refused as Error).message).toMatch(
      /pipeline "ledger" version 1 changed shape \(fingerprint [0-9a-f]{16} → [0-9a-f]{16}\) while 2 unfinished execution\(s\) are pinned/,
    );
    expect((refused as Error).message).toContain(
      `pinned to its earlier shape ${v1.fingerprint} (steps were [post], now [check, post]: moved post 1→2, added check at 1)`,
    );
    // Nothing was stored for the refused shape: the pipelines route still shows only the first.
    const { items } = await (await engine.request('GET', '/admin/tenants/acme/pipelines')).json();
    expect(items.find((item: { pipeline: string }) => item.pipeline === 'ledger').versions[0]).toMatchObject({
      fingerprint: v1.fingerprint,
      storedFingerprints: [v1.fingerprint],
      codeMatches: true,
      unfinishedOtherShape: 0,
    });
  });

  it('refuses a spread copy with its steps reordered under the same version: the fingerprint is derived, never carried', async () => {
    // `{ ...billing }` carries billing's fingerprint; the registry must derive it from the steps again.
    const reordered = { ...billing, steps: [billing.steps[1], billing.steps[0]] };
    expect(reordered.fingerprint).toBe(billing.fingerprint);
    const refused = await redeploy([v1, other, reordered, memo]).then(
      async (service) => {
        await service.stop();
        return undefined;
      },
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(ConfigError);
    expect((refused as Error).message).toContain(
      `pipeline "billing" version 1 changed shape (fingerprint ${billing.fingerprint} → ${definePipeline(reordered).fingerprint}) while 1 unfinished execution(s) are pinned to its earlier shape ${billing.fingerprint} (steps were [reserve, render], now [render, reserve]: moved reserve 1→2, moved render 2→1)`,
    );
  });

  it('names the step that changed transport or Command flag under the same names and order', async () => {
    const changed = { ...billing, steps: [localStep('reserve', () => null, { command: true }), functionStep('render', fail)] };
    const refused = await redeploy([v1, other, changed, memo]).then(
      async (service) => {
        await service.stop();
        return undefined;
      },
      (err: unknown) => err,
    );
    expect((refused as Error).message).toContain(
      '(steps were [reserve, render], now [reserve, render]: reserve not a Command → a Command, render LOCAL → FUNCTION)',
    );
  });

  it('starts with a warning when no unfinished execution is pinned to the earlier shape, and stores the new one', async () => {
    const lines: Record<string, unknown>[] = [];
    const service = await redeploy([v1, otherReshaped, billing, memo], lines);
    await service.stop();
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: 'warn',
        event: 'pipeline_definition_changed_without_version',
        pipeline: 'notes',
        version: 4,
        fingerprint: otherReshaped.fingerprint,
        change: 'steps were [a], now [a, b]: added b at 2',
      }),
    );
    // No execution was ever admitted under the earlier shape: it explains nothing and is forgotten.
    const { items } = await (await engine.request('GET', '/admin/tenants/acme/pipelines')).json();
    expect(items.find((item: { pipeline: string }) => item.pipeline === 'notes').versions[0]).toMatchObject({
      fingerprint: other.fingerprint,
      storedFingerprints: [otherReshaped.fingerprint],
    });
  });

  it('one mistaken start with nothing pinned leaves no lasting trace: the next start of the right shape is clean, the next refusal names the shape executions are pinned to', async () => {
    const pipelinesRoute = async () =>
      ((await (await engine.request('GET', '/admin/tenants/acme/pipelines')).json()).items as { pipeline: string; versions: Record<string, unknown>[] }[]).find(
        (item) => item.pipeline === 'memo',
      )!.versions[0];
    const mistaken: Record<string, unknown>[] = [];
    await (await redeploy([v1, other, billing, memoMistake], mistaken)).stop();
    expect(mistaken).toContainEqual(expect.objectContaining({ event: 'pipeline_definition_changed_without_version', pipeline: 'memo' }));
    expect(await pipelinesRoute()).toMatchObject({ storedFingerprints: [memo.fingerprint, memoMistake.fingerprint], codeMatches: false });

    // The right shape again: no warning, and the mistaken shape (nothing admitted under it) is gone.
    const undone: Record<string, unknown>[] = [];
    await (await redeploy([v1, other, billing, memo], undone)).stop();
    expect(undone.filter((line) => line.event === 'pipeline_definition_changed_without_version' && line.pipeline === 'memo')).toEqual([]);
    expect(await pipelinesRoute()).toMatchObject({ storedFingerprints: [memo.fingerprint], codeMatches: true, unfinishedOtherShape: 0 });
    const again: Record<string, unknown>[] = [];
    await (await redeploy([v1, other, billing, memo], again)).stop();
    expect(again.filter((line) => line.event === 'pipeline_definition_changed_without_version' && line.pipeline === 'memo')).toEqual([]);

    // An execution pinned to the right shape, then another mistaken shape: the refusal names the shape it is pinned to.
    await engine.start('acme', { pipeline: 'memo', executionId: 'memo-2', input: { fail: true } });
    await engine.waitFor('acme', 'memo-2', ['FAILED']);
    const refused = await redeploy([v1, other, billing, memoLater]).then(
      async (service) => {
        await service.stop();
        return undefined;
      },
      (err: unknown) => err,
    );
    expect((refused as Error).message).toContain(
      `pipeline "memo" version 1 changed shape (fingerprint ${memo.fingerprint} → ${memoLater.fingerprint}) while 1 unfinished execution(s) are pinned to its earlier shape ${memo.fingerprint} (steps were [write], now [send, write]: moved write 1→2, added send at 1)`,
    );
  });
});

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
import { definePipeline, localStep, NonRetryableException } from '../../src/pipeline/define';
import { startService } from '../../src/runtime';
import { startTestEngine, type TestEngine } from '../helpers/engine';

const fail = () => {
  throw new NonRetryableException('declined', 'DECLINED');
};
const v1 = definePipeline({ name: 'ledger', version: 1, steps: [localStep('post', fail)] });
const v1Reshaped = definePipeline({ name: 'ledger', version: 1, steps: [localStep('check', () => null), localStep('post', fail)] });
const other = definePipeline({ name: 'notes', version: 4, steps: [localStep('a', () => null)] });
const otherReshaped = definePipeline({ name: 'notes', version: 4, steps: [localStep('a', () => null), localStep('b', () => null)] });

let engine: TestEngine;

beforeAll(async () => {
  engine = await startTestEngine([v1, other]);
  await engine.start('acme', { pipeline: 'ledger', executionId: 'pinned-1' });
  await engine.start('beta', { pipeline: 'ledger', executionId: 'pinned-2' });
  await engine.waitFor('acme', 'pinned-1', ['FAILED']);
  await engine.waitFor('beta', 'pinned-2', ['FAILED']);
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
    // Nothing was stored for the refused shape: the pipelines route still shows only the first.
    const { items } = await (await engine.request('GET', '/admin/tenants/acme/pipelines')).json();
    expect(items.find((item: { pipeline: string }) => item.pipeline === 'ledger').versions[0]).toMatchObject({
      fingerprint: v1.fingerprint,
      storedFingerprints: [v1.fingerprint],
      codeMatches: true,
      unfinishedOtherShape: 0,
    });
  });

  it('starts with a warning when no unfinished execution is pinned to the earlier shape, and stores the new one', async () => {
    const lines: Record<string, unknown>[] = [];
    const service = await redeploy([v1, otherReshaped], lines);
    await service.stop();
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: 'warn',
        event: 'pipeline_definition_changed_without_version',
        pipeline: 'notes',
        version: 4,
        fingerprint: otherReshaped.fingerprint,
      }),
    );
    const { items } = await (await engine.request('GET', '/admin/tenants/acme/pipelines')).json();
    expect(items.find((item: { pipeline: string }) => item.pipeline === 'notes').versions[0]).toMatchObject({
      fingerprint: other.fingerprint,
      storedFingerprints: [other.fingerprint, otherReshaped.fingerprint],
      codeMatches: false,
    });
  });
});

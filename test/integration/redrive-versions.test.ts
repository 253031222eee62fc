/**
 * Re-drive under a changed definition, in-process (the worker and the API share the
 * registry): the Command guards follow the step by name into the current version; a
 * step that vanished stays refused even with the opt-in; a shape changed under the same
 * version is never taken for the pinned one.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { definePipeline, localStep } from '../../src/pipeline/define';
import { startTestEngine, type TestEngine } from '../helpers/engine';

const calls: string[] = [];
const step = (version: number, name: string, options: { command?: boolean } = {}) =>
  localStep(
    name,
    (input: { fail?: string } | null, ctx) => {
      calls.push(`${ctx.executionId}/${name}@v${version}:${ctx.transitionKey}`);
      if (input?.fail === name && ctx.attempt === 1) throw Object.assign(new Error('down'), { code: 'DOWN' });
      return input ?? {};
    },
    { ...options, retry: { limit: 0 } },
  );

const billingV1 = definePipeline({ name: 'billing', steps: [step(1, 'prepare'), step(1, 'charge', { command: true })] });
const billingV2 = definePipeline({ name: 'billing', version: 2, steps: [step(2, 'prepare'), step(2, 'audit'), step(2, 'charge', { command: true })] });
const billingV3 = definePipeline({ name: 'billing', version: 3, steps: [step(3, 'prepare'), step(3, 'audit')] });

let engine: TestEngine;
beforeAll(async () => {
  engine = await startTestEngine([billingV1]);
});
afterAll(async () => {
  await engine?.stop();
});

const redrive = (executionId: string, body: Record<string, unknown>, query = '') =>
  engine.request('POST', `/admin/tenants/acme/executions/${executionId}/redrive${query}`, { body: { reason: 'versions', allowFailed: true, ...body } });

describe('re-drive under a changed definition', () => {
  it('checks the Command guards against the same-named step of the current version and moves its effect along', async () => {
    await engine.start('acme', { pipeline: 'billing', executionId: 'cmd-v', input: { fail: 'charge' } });
    const failed = await engine.waitFor('acme', 'cmd-v', ['FAILED', 'SUCCEEDED']);
    expect(failed).toMatchObject({ status: 'FAILED', failedStepIndex: 1, pipelineVersion: 1 });
    expect(await engine.effects.get('acme', 'cmd-v', 'charge')).toMatchObject({ stepIndex: 1, status: 'FAILED_RETRYABLE' });

    engine.service.registry.register(billingV2);
    engine.service.registry.unregister('billing', 1);
    // The guard finds charge's retained effect by name although charge is step 2 now.
    const needsIntent = await redrive('cmd-v', { expectedVersion: failed.version, resumeUnderCurrentVersion: true });
    expect(needsIntent.status).toBe(409);
    expect((await needsIntent.json()).code).toBe('RETRY_FAILED_COMMAND_INTENT_REQUIRED');
    const preview = await (
      await redrive('cmd-v', { expectedVersion: failed.version, resumeUnderCurrentVersion: true, intent: 'RETRY_FAILED_COMMAND' }, '?dryRun=true')
    ).json();
    // audit was inserted before charge: resuming at charge under version 2 skips it, and the dry run says so.
    expect(preview).toMatchObject({
      admitted: true,
      resumeStepIndex: 2,
      pipelineVersion: 2,
      fromPipelineVersion: 1,
      effectStatus: 'FAILED_RETRYABLE',
      skippedSteps: ['audit'],
    });

    const accepted = await redrive('cmd-v', { expectedVersion: failed.version, resumeUnderCurrentVersion: true, intent: 'RETRY_FAILED_COMMAND' });
    expect(accepted.status).toBe(202);
    expect(await engine.waitFor('acme', 'cmd-v', ['SUCCEEDED', 'FAILED'])).toMatchObject({ status: 'SUCCEEDED', pipelineVersion: 2, stepCount: 3 });
    expect(calls.filter((call) => call.startsWith('cmd-v/'))).toEqual(['cmd-v/prepare@v1:cmd-v:0:1', 'cmd-v/charge@v1:cmd-v:1:1', 'cmd-v/charge@v2:cmd-v:2:2']);
    // One effect row for charge, claimed again by name at its new index.
    expect(await engine.effects.list('acme', 'cmd-v')).toEqual([
      expect.objectContaining({ stepName: 'charge', stepIndex: 2, status: 'SUCCEEDED', transitionKey: 'cmd-v:2:2' }),
    ]);
  });

  it('refuses the opt-in when the step to resume vanished from the current version, changing nothing', async () => {
    await engine.start('acme', { pipeline: 'billing', executionId: 'vanish', input: { fail: 'charge' } });
    const failed = await engine.waitFor('acme', 'vanish', ['FAILED', 'SUCCEEDED']);
    expect(failed).toMatchObject({ status: 'FAILED', failedStepIndex: 2, pipelineVersion: 2 });
    engine.service.registry.register(billingV3);
    engine.service.registry.unregister('billing', 2);

    const refused = await redrive('vanish', { expectedVersion: failed.version, resumeUnderCurrentVersion: true, intent: 'RETRY_FAILED_COMMAND' });
    expect(refused.status).toBe(409);
    expect(await refused.json()).toMatchObject({ code: 'PIPELINE_DEFINITION_CHANGED', resumeStep: 'charge', diff: { vanished: ['charge'], appeared: [] } });
    expect(await engine.service.store.get('acme', 'vanish')).toEqual(failed);
  });

  it('never takes a shape changed under the same version for the one an execution was admitted under', async () => {
    await engine.start('acme', { pipeline: 'billing', executionId: 'reshaped', input: { fail: 'audit' } });
    const failed = await engine.waitFor('acme', 'reshaped', ['FAILED', 'SUCCEEDED']);
    expect(failed).toMatchObject({ status: 'FAILED', failedStepIndex: 1, pipelineVersion: 3 });
    // Version 3 redeployed with a step inserted before audit but no new version.
    engine.service.registry.unregister('billing', 3);
    engine.service.registry.register(definePipeline({ name: 'billing', version: 3, steps: [step(3, 'prepare'), step(3, 'check'), step(3, 'audit')] }));

    const refused = await redrive('reshaped', { expectedVersion: failed.version });
    expect(refused.status).toBe(409);
    const body = await refused.json();
    expect(body).toMatchObject({
      code: 'PIPELINE_DEFINITION_CHANGED',
      pinnedVersion: 3,
      currentVersion: 3,
      resumeStep: 'audit',
      diff: { appeared: ['check'], moved: [{ step: 'audit', fromIndex: 1, toIndex: 2 }] },
    });
    expect(body.detail).toContain('changed without a new version');
    expect(await engine.service.store.get('acme', 'reshaped')).toEqual(failed);
  });

  it('lists the versions, the current one, and how many executions still need each', async () => {
    const res = await engine.request('GET', '/admin/tenants/acme/pipelines');
    expect(res.status).toBe(200);
    const { items } = await res.json();
    expect(items).toEqual([
      {
        pipeline: 'billing',
        currentVersion: 3,
        versions: [
          // version 2 is gone but 'vanish' still needs it; version 1 has nothing left and is not listed
          {
            version: 2,
            registered: false,
            newExecutions: false,
            fingerprint: null,
            storedFingerprints: [expect.stringMatching(/^[0-9a-f]{16}$/)],
            codeMatches: null,
            steps: ['prepare', 'audit', 'charge'],
            unfinished: { QUEUED: 0, RUNNING: 0, FAILED: 1, REMOTE_OUTCOME_UNKNOWN: 0, total: 1 },
            unfinishedOtherShape: 0,
          },
          {
            version: 3,
            registered: true,
            newExecutions: true,
            fingerprint: expect.stringMatching(/^[0-9a-f]{16}$/),
            // The running code reshaped version 3 without a new version: the shape 'reshaped' was admitted under is not it.
            storedFingerprints: [expect.not.stringMatching(engine.service.registry.find('billing', 3)!.fingerprint)],
            codeMatches: false,
            steps: ['prepare', 'check', 'audit'],
            unfinished: { QUEUED: 0, RUNNING: 0, FAILED: 1, REMOTE_OUTCOME_UNKNOWN: 0, total: 1 },
            unfinishedOtherShape: 1,
          },
        ],
      },
    ]);
    expect((await (await engine.request('GET', '/admin/tenants/other/pipelines')).json()).items[0].versions).toEqual([
      expect.objectContaining({ version: 3, unfinished: expect.objectContaining({ total: 0 }) }),
    ]);
  });
});

/**
 * Triage scenarios through real executions (one tenant per scenario, real Postgres and
 * dev server): each classification of spec rule 4, with its first action.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PublishOutcomeSchema, TriageSchema } from '../../src/contract/responses';
import { definePipeline, localStep, NonRetryableException } from '../../src/pipeline/define';
import { startTestEngine, type TestEngine } from '../helpers/engine';
import { until } from '../helpers/until';

let engine: TestEngine;

beforeAll(async () => {
  engine = await startTestEngine([
    definePipeline({
      name: 'items',
      steps: [
        localStep('check', (input: { bad: number }, ctx) => {
          for (let i = 0; i < input.bad; i++) ctx.reject({ id: `i-${i}` }, { errorCode: 'UNKNOWN_CURRENCY', reason: `currency XY${i} unknown` });
          return { ok: true };
        }),
      ],
    }),
    definePipeline({
      name: 'broken',
      steps: [
        localStep('call', () => {
          throw new NonRetryableException('contract changed', 'CONTRACT_MISMATCH');
        }),
      ],
    }),
    definePipeline({ name: 'ok', steps: [localStep('noop', () => ({}))] }),
  ]);
  engine.service.dispatcher.beforeStart = (tenantId) => {
    if (tenantId === 'pressure') throw new Error('injected: orchestration admission unavailable');
  };
});
afterAll(async () => {
  await engine?.stop();
});

const triage = async (tenant: string) => {
  const res = await engine.request('GET', `/admin/tenants/${tenant}/triage?window=15m`);
  expect(res.status).toBe(200);
  return TriageSchema.parse(await res.json());
};

describe('triage', () => {
  it('says healthy when nothing moves', async () => {
    await engine.start('calm', { pipeline: 'ok', executionId: 'calm-1' });
    await engine.waitFor('calm', 'calm-1', ['SUCCEEDED']);
    expect(await triage('calm')).toMatchObject({ classification: 'healthy', findings: [], signals: { executionsSucceeded: { current: 1 } } });
  });

  it('classifies rising rejects with stable success as data-quality drift', async () => {
    for (const id of ['d-1', 'd-2']) {
      await engine.start('drift', { pipeline: 'items', executionId: id, input: { bad: 3 } });
      await engine.waitFor('drift', id, ['SUCCEEDED']);
    }
    const answer = await triage('drift');
    expect(answer).toMatchObject({
      classification: 'data_quality_drift',
      firstAction: expect.stringContaining('application-owned'),
      signals: { itemRejects: { current: 6, previous: 0, trend: 'rising' }, executionsSucceeded: { current: 2, trend: 'rising' } },
    });
    expect((answer.findings[0].detail as { topFingerprintShare: number }).topFingerprintShare).toBe(1);
  });

  it('classifies a growing Execution DLQ as systemic execution failure and names the dominant errorCode', async () => {
    for (const id of ['s-1', 's-2', 's-3']) {
      await engine.start('systemic', { pipeline: 'broken', executionId: id });
      await engine.waitFor('systemic', id, ['FAILED']);
    }
    expect(await triage('systemic')).toMatchObject({
      classification: 'systemic_execution_failure',
      firstAction: 'correct the payload/contract issue before replay',
      findings: [{ detail: { dominantErrorCode: 'CONTRACT_MISMATCH', dominantTerminalReason: 'non_retryable', envelopes: 3 } }],
      signals: { executionDlq: { current: 3, trend: 'rising' } },
    });
  });

  it('classifies a rising checkpoint backlog as admission pressure', async () => {
    for (const handoffKey of ['p-1', 'p-2', 'p-3', 'p-4']) {
      const res = await engine.request('POST', '/api/tenants/pressure/checkpoints', { body: { handoffKey, pipeline: 'ok', records: [] } });
      expect(res.status).toBe(202);
      PublishOutcomeSchema.strict().parse(await res.json());
    }
    await until(
      () => engine.logs.some((l) => l.event === 'checkpoint_publication_delivery_failure' && l.tenantId === 'pressure'),
      15_000,
      'a delivery-failure log',
    );
    expect(await triage('pressure')).toMatchObject({
      classification: 'admission_pressure',
      signals: { checkpointBacklog: { current: 4, previous: 0, trend: 'rising' } },
    });
    // Not an Execution DLQ event, and not an item reject.
    expect((await engine.service.db.query("SELECT count(*)::int AS n FROM execution_dlq WHERE tenant_id = 'pressure'")).rows[0].n).toBe(0);
  });

  it('answers the cross-tenant view to an unrestricted admin, and rejects a bad window', async () => {
    const all = await engine.request('GET', '/admin/triage?window=1h');
    expect(all.status).toBe(200);
    expect((await all.json()).classification).toBe('systemic_execution_failure');
    const bad = await engine.request('GET', '/admin/triage?window=5s');
    expect([bad.status, (await bad.json()).code]).toEqual([400, 'VALIDATION_FAILED']);
  });
});

/**
 * The Item Reject Sink and the metrics, against real Postgres and the dev server: a
 * step rejecting 3 of 10 items lets the execution succeed, the sink holds 3 metadata
 * envelopes and no payload, a redelivered step does not add them twice, and /metrics
 * counts what happened with bounded labels.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { definePipeline, localStep } from '../../src/pipeline/define';
import { rejectFingerprint } from '../../src/activities/rejects';
import { RejectList } from '../../src/contract/responses';
import { startTestEngine, type TestEngine } from '../helpers/engine';
import { until } from '../helpers/until';

const SENTINEL = 'SENTINEL-CARD-5500000000000004';
let engine: TestEngine;
const failFirstAttempt = true;

interface Item {
  id: string;
  sku: string;
  card: string;
}

beforeAll(async () => {
  engine = await startTestEngine([
    definePipeline({
      name: 'items',
      steps: [
        localStep('ingest', (input: { items: Item[] }, ctx) => {
          const kept = input.items.filter((item) => {
            if (item.sku.startsWith('BAD')) {
              ctx.reject(item, { errorCode: 'INVALID_SKU', reason: `sku ${item.sku} is not in catalogue 42` });
              return false;
            }
            return true;
          });
          // The first attempt fails after rejecting: its rejects must not be kept.
          if (failFirstAttempt && ctx.attempt === 1) throw new Error('flaky downstream');
          return { count: kept.length };
        }),
      ],
    }),
  ]);
});
afterAll(async () => {
  await engine?.stop();
});

describe('item reject sink', () => {
  it('keeps 3 metadata envelopes for 3 rejected items of 10, once, and the execution succeeds', async () => {
    const items: Item[] = Array.from({ length: 10 }, (_, i) => ({ id: `item-${i}`, sku: i % 3 === 0 && i > 0 ? `BAD-${i}` : `SKU-${i}`, card: SENTINEL }));
    await engine.start('acme', { pipeline: 'items', executionId: 'rej-1', input: { items } });
    const record = await engine.waitFor('acme', 'rej-1', ['SUCCEEDED', 'FAILED']);
    expect(record.status).toBe('SUCCEEDED');
    expect(record.segmentInput).toEqual({ count: 7 });

    const page = RejectList.parse(await (await engine.request('GET', '/admin/tenants/acme/rejects')).json());
    expect(page.items).toHaveLength(3);
    expect(page.items.map((r: any) => r.itemKey).sort()).toEqual(['item-3', 'item-6', 'item-9']);
    expect(page.items[0]).toMatchObject({
      tenantId: 'acme',
      executionId: 'rej-1',
      transitionKey: 'rej-1:0:2',
      step: 'ingest',
      errorCode: 'INVALID_SKU',
      fingerprint: rejectFingerprint('ingest', 'INVALID_SKU', 'sku BAD-9 is not in catalogue 42'),
      createdAtEpochMs: expect.any(Number),
    });
    // One fingerprint for the three (digits folded), and no payload anywhere.
    expect(new Set(page.items.map((r: any) => r.fingerprint)).size).toBe(1);
    const table = await engine.service.db.query('SELECT * FROM item_reject');
    expect(table.rowCount).toBe(3);
    expect(JSON.stringify(table.rows)).not.toContain(SENTINEL);
    expect(JSON.stringify(page)).not.toContain(SENTINEL);
    expect(JSON.stringify(engine.logs)).not.toContain(SENTINEL);
  });

  it('pages rejects with a cursor', async () => {
    const first = await (await engine.request('GET', '/admin/tenants/acme/rejects?limit=2')).json();
    const second = await (await engine.request('GET', `/admin/tenants/acme/rejects?limit=2&cursor=${first.nextCursor}`)).json();
    expect([...first.items, ...second.items]).toHaveLength(3);
    expect(second.nextCursor).toBeNull();
  });
});

describe('metrics', () => {
  it('serves Prometheus text with the counters and the store-read gauges, no execution ids', async () => {
    // The step counts its rejects just after its commit (see alerts.test.ts): scrape once it has.
    await until(() => engine.logs.some((line) => line.event === 'item_rejects_committed' && line.executionId === 'rej-1'), 30_000, "rej-1's rejects counted");
    const res = await engine.service.app.request('/metrics');
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toMatch(/pipeline_executions_started_total \d+/);
    expect(text).toContain('pipeline_executions_succeeded_total 1');
    expect(text).toContain('pipeline_item_rejects_total{error_code="INVALID_SKU"} 3');
    expect(text).toContain('pipeline_step_retries_total{error_code="OPERATOR_ERROR"} 1');
    expect(text).toContain('pipeline_item_reject_backlog 3');
    expect(text).toContain('pipeline_item_reject_top_fingerprint_share 1');
    expect(text).toContain('pipeline_execution_dlq_backlog 0');
    expect(text).not.toContain('rej-1');
  });

  it('caps error-code label values', () => {
    const metrics = engine.service.metrics;
    const codes = Array.from({ length: 60 }, (_, i) => metrics.code(`CODE_${i}`));
    expect(codes.filter((code) => code === 'OTHER').length).toBeGreaterThan(0);
    expect(new Set(codes).size).toBeLessThanOrEqual(51);
  });
});

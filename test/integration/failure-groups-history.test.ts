/**
 * Failure groups of the DLQ and an execution's story, against the real dev server and
 * Postgres: one dependency failing two ways gives exactly two groups with the right
 * counts; a re-driven execution leaves its group; the history names every run, every
 * committed attempt with its outcome and code, and the re-drive with its principal.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExecutionStory } from '../../src/contract/responses';
import { definePipeline, localStep } from '../../src/pipeline/define';
import { startTestEngine, type TestEngine } from '../helpers/engine';

let engine: TestEngine;
const healthy = new Set<string>();

/** The "ledger" dependency: refuses connections for some executions, times out for others. */
const ledger = localStep(
  'ledger',
  (input: { way: 'refused' | 'timeout'; n: number }, ctx) => {
    if (healthy.has(ctx.executionId)) return { booked: input.n };
    if (input.way === 'refused') throw Object.assign(new Error(`connect ECONNREFUSED 10.0.0.${input.n}:5432 for ${ctx.executionId}`), { code: 'LEDGER_DOWN' });
    throw Object.assign(new Error(`ledger call for "${ctx.executionId}" timed out after ${1000 + input.n} ms`), { code: 'LEDGER_DOWN' });
  },
  { retry: { limit: 1 } },
);

const pipelines = [
  definePipeline({ name: 'book', steps: [localStep('prepare', (input: unknown) => input), ledger, localStep('notify', (input: unknown) => input)] }),
];

async function failAll(ways: ['refused' | 'timeout', number][]) {
  const ids: string[] = [];
  for (const [way, count] of ways) {
    for (let n = 1; n <= count; n++) {
      const executionId = `${way}-${n}`;
      ids.push(executionId);
      await engine.start('groups', { pipeline: 'book', executionId, input: { way, n } });
    }
  }
  for (const id of ids) await engine.waitFor('groups', id, ['FAILED']);
  return ids;
}

const groups = async (query = '') => {
  const res = await engine.request('GET', `/admin/tenants/groups/dlq/groups${query}`);
  expect(res.status).toBe(200);
  return (await res.json()).items as any[];
};

beforeAll(async () => {
  engine = await startTestEngine(pipelines);
  await failAll([
    ['refused', 7],
    ['timeout', 4],
  ]);
});
afterAll(async () => engine?.stop());

describe('DLQ failure groups', () => {
  it('groups one dependency failing two ways into exactly two groups with their counts', async () => {
    const items = await groups();
    expect(items.map((g) => [g.signature.message, g.count])).toEqual([
      ['connect ECONNREFUSED #:# for refused-#', 7],
      ['ledger call for "…" timed out after # ms', 4],
    ]);
    for (const group of items) {
      expect(group.signature).toMatchObject({ step: 'ledger', errorCode: 'LEDGER_DOWN', terminalReason: 'retry_exhausted', transport: 'LOCAL' });
      expect(group.groupId).toMatch(/^[0-9a-f]{16}$/);
      expect(group.selection).toEqual({ groupId: group.groupId });
      expect(group.lastHour.count).toBe(group.count);
      expect(group.lastHour.buckets).toHaveLength(6);
      expect(Date.parse(group.firstSeen)).toBeLessThanOrEqual(Date.parse(group.lastSeen));
    }
    expect(await groups('?errorCode=OTHER')).toEqual([]);
    expect((await groups('?limit=1')).length).toBe(1);
  });

  it('answers 400 for a bad query and 401 without a token', async () => {
    const bad = await engine.request('GET', '/admin/tenants/groups/dlq/groups?terminalReason=nope');
    expect([bad.status, (await bad.json()).code]).toEqual([400, 'VALIDATION_FAILED']);
    const anon = await engine.request('GET', '/admin/tenants/groups/dlq/groups', { token: null });
    expect(anon.status).toBe(401);
  });

  it('drops a re-driven execution from its group, and keeps its envelope in the DLQ', async () => {
    const before = await groups();
    const record = await engine.service.store.get('groups', 'timeout-1');
    healthy.add('timeout-1');
    const res = await engine.request('POST', '/admin/tenants/groups/executions/timeout-1/redrive', {
      body: { expectedVersion: record!.version, reason: 'ledger restored', allowFailed: true },
    });
    expect(res.status).toBe(202);
    await engine.waitFor('groups', 'timeout-1', ['SUCCEEDED']);
    const after = await groups();
    expect(after.find((g) => g.groupId === before[1].groupId).count).toBe(3);
    const dlq = await engine.service.db.query(`SELECT 1 FROM execution_dlq WHERE tenant_id = 'groups'`);
    expect(dlq.rowCount).toBe(11);
  });
});

describe("an execution's story", () => {
  it('names every run, every committed attempt with its outcome, and the re-drive with who and why', async () => {
    const res = await engine.request('GET', '/admin/tenants/groups/executions/timeout-1/history');
    expect(res.status).toBe(200);
    const story = await res.json();
    expect(ExecutionStory.safeParse(story).error).toBeUndefined(); // the documented shape
    expect(story).toMatchObject({ executionId: 'timeout-1', status: 'SUCCEEDED', pipeline: 'book' });
    expect(story.runs.map((r: any) => [r.dispatch, r.status])).toEqual([
      ['start', 'STARTED'],
      ['redrive', 'STARTED'],
    ]);
    expect(story.runs.every((r: any) => typeof r.runId === 'string' && r.startedAt)).toBe(true);
    expect(new Set(story.runs.map((r: any) => r.runId)).size).toBe(2);
    expect(story.attempts.map((a: any) => [a.step, a.attempt, a.outcome, a.errorCode])).toEqual([
      ['prepare', 1, 'SUCCEEDED', null],
      ['ledger', 1, 'RETRY_SCHEDULED', 'LEDGER_DOWN'],
      ['ledger', 2, 'FAILED', 'LEDGER_DOWN'],
      ['ledger', 3, 'SUCCEEDED', null],
      ['notify', 1, 'SUCCEEDED', null],
    ]);
    expect(story.attempts[2].transitionKey).toBe('timeout-1:1:2');
    // Attempts of the first run carry its runId, the re-drive's carry the second.
    expect(story.attempts[2].runId).toBe(story.runs[0].runId);
    expect(story.attempts[3].runId).toBe(story.runs[1].runId);
    expect(story.redrives).toEqual([
      expect.objectContaining({
        principal: 'test-admin',
        reason: 'ledger restored',
        mode: 'FAILED',
        jobId: null,
        fromStatus: 'FAILED',
        resumeStepIndex: 1,
        attempt: 3,
      }),
    ]);
    expect(story.redrives[0].redriveId).toBe(story.runs[1].dispatchId);
    expect(story.dlq).toEqual([expect.objectContaining({ transitionKey: 'timeout-1:1:2', terminalReason: 'retry_exhausted', errorCode: 'LEDGER_DOWN' })]);
    expect(story.disposition).toBeNull();
  });

  it('answers 404 for an unknown execution', async () => {
    const res = await engine.request('GET', '/admin/tenants/groups/executions/nobody/history');
    expect([res.status, (await res.json()).code]).toEqual([404, 'EXECUTION_NOT_FOUND']);
  });
});

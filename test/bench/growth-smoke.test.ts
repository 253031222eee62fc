/**
 * The growth figure's harness at tiny sizes (two stores of a few hundred executions, three
 * rounds): it seeds, serves every operator read over HTTP, answers each with 200, times
 * admissions and step commits, and renders its table. No timing is asserted; the figure
 * itself is `npm run bench -- --only growth`.
 */
import { describe, expect, it } from 'vitest';
import { measureGrowth, renderGrowth } from '../../bench/growth';
import { createLog } from '../../src/log';

describe('growth figure harness (smoke)', () => {
  it('measures every read on two seeded stores and renders the table', async () => {
    const results = await measureGrowth({
      sizes: [400, 4000],
      samples: 3,
      commits: 3,
      badDay: 300,
      jobs: { count: 3, items: 200 },
      log: createLog({ level: 'silent' }),
      say: () => undefined,
    });
    expect(results.sizes.map((s) => [s.executions, s.envelopes])).toEqual([
      [400, Math.floor(200 / 33) + 300],
      [4000, Math.floor(3800 / 33) + 300],
    ]);
    // The fleet reads and the bulk dry run are among them, each answered 200 (measureGrowth throws otherwise).
    expect(results.reads.map((r) => r.read)).toEqual(
      expect.arrayContaining(['GET …/pipelines', 'GET …/redrive-jobs (20 jobs of 10,000 items)', 'POST …/redrive-jobs?dryRun=true (10,000 executionIds)']),
    );
    expect(results.reads.length).toBeGreaterThanOrEqual(20);
    for (const read of results.reads) {
      expect(read.ms).toHaveLength(2);
      expect(read.ratio).toBeGreaterThan(0);
    }
    expect(results.stepCommitMs).toHaveLength(2);
    const table = renderGrowth(results, { date: 'today', load: '0', machine: 'test', samples: 3 });
    expect(table).toContain('| `GET /metrics` |');
    expect(table).toContain('| Step commit round trip (p50 / p99) |');
  });
});

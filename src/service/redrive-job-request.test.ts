import { describe, expect, it } from 'vitest';
import { StoredValueError } from '../errors';
import type { RedriveJob } from '../store/redrive-job-store';
import { DEFAULT_HALT_ON } from '../contract/requests';
import { parseJob } from './redrive-job-request';

const stored: RedriveJob = {
  tenantId: 'acme',
  jobId: 'j-1',
  status: 'RUNNING',
  principal: 'ops',
  reason: 'ledger back',
  request: { selection: { executionIds: ['e-1'] }, reason: 'ledger back', allowFailed: true, batchSize: 50, ratePerSecond: 10, haltOn: DEFAULT_HALT_ON },
  batchSize: 50,
  ratePerSecond: 10,
  canary: null,
  haltOn: DEFAULT_HALT_ON,
  haltReason: null,
  failureReason: null,
  controlLog: [{ action: 'pause', principal: 'ops', at: '2026-11-25T00:00:00.000Z' }],
  started: true,
  excluded: {},
  selected: 1,
  yielding: null,
  createdAt: '2026-11-25T00:00:00.000Z',
  updatedAt: '2026-11-25T00:00:00.000Z',
  finishedAt: null,
};

describe("a job's stored JSON is parsed on read, never cast", () => {
  it('parses a row written under the current schema', () => {
    const job = parseJob(stored);
    expect(job.request.selection).toEqual({ executionIds: ['e-1'] });
    expect(job.haltOn).toEqual(DEFAULT_HALT_ON);
    expect(parseJob({ ...stored, yielding: { rate: 2.5, quietestMs: 12, latestMs: 30, at: '2026-11-29T00:00:00.000Z' } }).yielding?.rate).toBe(2.5);
  });

  it.each([
    ['request', { ...stored, request: { ...(stored.request as object), selection: { executionIds: [] } } }, /request no longer parses \(selection/],
    ['haltOn', { ...stored, haltOn: { failedAgainShare: 'half' } }, /haltOn no longer parses \(failedAgainShare/],
    ['controlLog', { ...stored, controlLog: [{ action: 'explode' }] as never }, /controlLog no longer parses \(0\.action/],
    ['excluded', { ...stored, excluded: { GONE: -1 } }, /excluded no longer parses \(GONE/],
    ['yielding', { ...stored, yielding: { rate: 0 } }, /yielding no longer parses \(rate/],
  ])('a stored %s that no longer parses is an error naming the row and the field', (field, row, message) => {
    let error: unknown;
    try {
      parseJob(row as RedriveJob);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(StoredValueError);
    expect((error as StoredValueError).message).toMatch(/^redrive_job acme\/j-1: the stored /);
    expect((error as StoredValueError).message).toMatch(message);
    expect((error as StoredValueError).extra).toEqual({ table: 'redrive_job', row: 'acme/j-1', field });
  });
});

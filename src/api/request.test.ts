import { describe, expect, it } from 'vitest';
import { isIsoTimestamp, isRowId } from './request';

describe('cursor contents', () => {
  it('takes only timestamps in the form the API writes, that Postgres can read', () => {
    expect(isIsoTimestamp('2026-11-22T09:00:00.000Z')).toBe(true);
    for (const forged of [
      '2026-02-30T00:00:00.000Z',
      '2026-02-30',
      '+275760-09-13T00:00:00.000Z',
      '0000-01-01T00:00:00.000Z',
      '2026-01-01T00:00:00Z',
      42,
      null,
    ]) {
      expect(isIsoTimestamp(forged)).toBe(false);
    }
  });
  it('takes only positive safe integers as row ids', () => {
    expect([isRowId(1), isRowId(0), isRowId(-1), isRowId(1.5), isRowId(2 ** 60), isRowId('1')]).toEqual([true, false, false, false, false, false]);
  });
});

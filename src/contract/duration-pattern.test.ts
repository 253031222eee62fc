import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseDuration } from '../config/duration';
import { durationRangePattern, integerRangePattern } from './fields';

describe('integerRangePattern', () => {
  it('matches exactly the integers of the range, without leading zeros', () => {
    fc.assert(
      fc.property(fc.nat(100_000), fc.nat(100_000), fc.nat(200_000), (a, b, n) => {
        const [lo, hi] = a <= b ? [a, b] : [b, a];
        const pattern = new RegExp(`^${integerRangePattern(lo, hi)}$`);
        expect(pattern.test(String(n))).toBe(n >= lo && n <= hi);
        expect(pattern.test(`0${n}`)).toBe(false);
      }),
      { numRuns: 2000 },
    );
  });

  it('covers the edges of each range it writes', () => {
    for (const [lo, hi] of [
      [0, 0],
      [0, 9],
      [1, 1440],
      [60, 86_400],
      [60_000, 86_400_000],
      [99, 101],
    ]) {
      const pattern = new RegExp(`^${integerRangePattern(lo, hi)}$`);
      for (const n of [lo - 1, lo, lo + 1, hi - 1, hi, hi + 1]) if (n >= 0) expect([n, pattern.test(String(n))]).toEqual([n, n >= lo && n <= hi]);
    }
  });
});

describe('durationRangePattern', () => {
  const units = ['', 'ms', 's', 'm', 'h', 'd', 'PT|S', 'PT|M', 'PT|H'];
  it('admits a whole-unit duration exactly when it lies in the range (window: 1m to 24h, wait: 0s to 60s)', () => {
    for (const [min, max] of [
      [60_000, 86_400_000],
      [0, 60_000],
    ]) {
      const pattern = durationRangePattern(min, max);
      fc.assert(
        fc.property(fc.nat(100_000_000), fc.constantFrom(...units), (n, unit) => {
          const [prefix, suffix] = unit.includes('|') ? unit.split('|') : ['', unit];
          const text = `${prefix}${n}${suffix}`;
          const ms = parseDuration(text)!;
          expect(pattern.test(text)).toBe(ms >= min && ms <= max);
        }),
        { numRuns: 3000 },
      );
      expect(pattern.test(`${max / 1000}s`)).toBe(true);
      expect(pattern.test(`${max / 1000 + 1}s`)).toBe(false);
    }
    expect(durationRangePattern(60_000, 86_400_000).test('0')).toBe(false);
    expect(durationRangePattern(0, 60_000).test('61s')).toBe(false);
  });
});

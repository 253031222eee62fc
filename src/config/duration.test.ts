import { describe, expect, it } from 'vitest';
import { parseDuration } from './duration';

describe('parseDuration', () => {
  it.each([
    ['30s', 30_000],
    ['1500ms', 1500],
    ['PT30S', 30_000],
    ['PT1M30S', 90_000],
    ['pt0.5s', 500],
    ['2m', 120_000],
    ['7d', 604_800_000],
    ['250', 250],
    [750, 750],
  ])('reads %s as %i ms', (input, expected) => {
    expect(parseDuration(input)).toBe(expected);
  });

  it.each(['', 'thirty seconds', '30x', 'PT', '-5s', 'P1D', -1, Number.NaN, null, {}])('rejects %s', (input) => {
    expect(parseDuration(input)).toBeUndefined();
  });
});

import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { findUnstorable, isStorableString, MAX_JSON_DEPTH, nestsDeeperThan, StorableJson, storableText } from './storable';

describe('storable text and JSON', () => {
  it('refuses NUL and unpaired surrogates, accepts paired ones', () => {
    expect(isStorableString('a\u0000b')).toBe(false);
    expect(isStorableString('a\ud800')).toBe(false);
    expect(isStorableString('\udc00x')).toBe(false);
    expect(isStorableString('emoji \ud83d\ude00 注文')).toBe(true);
  });

  it('names the position of the bad string, never a key name', () => {
    expect(findUnstorable({ a: 1, b: ['ok', 'x\u0000'] })).toEqual([1, 1]);
    expect(findUnstorable({ ok: 1, ['SECRET\u0000']: 2 })).toEqual([1]);
    expect(findUnstorable([{ fine: true }])).toBeNull();
    const issue = z.object({ input: StorableJson }).safeParse({ input: { ['SECRET\u0000']: 1 } }).error!.issues[0];
    expect(issue.path).toEqual(['input', 0]);
    expect(JSON.stringify(issue)).not.toContain('SECRET');
  });

  it("keeps the wrapped schema's own checks", () => {
    const Reason = storableText(z.string().min(2));
    expect(Reason.safeParse('ok').success).toBe(true);
    expect(Reason.safeParse('o').success).toBe(false);
    expect(Reason.safeParse('o\u0000k').success).toBe(false);
  });
});

describe('deeply nested JSON', () => {
  const nested = (depth: number) => JSON.parse(`${'['.repeat(depth)}${']'.repeat(depth)}`);

  it('refuses a value nested past the limit with an issue, without overflowing the stack', () => {
    expect(nestsDeeperThan(nested(MAX_JSON_DEPTH), MAX_JSON_DEPTH)).toBe(false);
    expect(nestsDeeperThan(nested(MAX_JSON_DEPTH + 1), MAX_JSON_DEPTH)).toBe(true);
    const parsed = StorableJson.safeParse(nested(100_000));
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0].message).toMatch(/levels deep/);
    expect(StorableJson.safeParse({ a: nested(50) }).success).toBe(true);
  });
});

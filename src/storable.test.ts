import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { findUnstorable, isStorableString, StorableJson, storableText } from './storable';

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

  it('keeps the wrapped schema\'s own checks', () => {
    const Reason = storableText(z.string().min(2));
    expect(Reason.safeParse('ok').success).toBe(true);
    expect(Reason.safeParse('o').success).toBe(false);
    expect(Reason.safeParse('o\u0000k').success).toBe(false);
  });
});

import { describe, expect, it } from 'vitest';
import { demoBehaviour, inputPosition } from './demo';
import { NonRetryableException } from './define';

describe('demo input validation', () => {
  it('names where the bad value is by position, never a key the caller chose', async () => {
    const input = { fail: { validate: { mode: 'retryable' }, 'SECRET-KEY-4111': { mode: 'sometimes' } } };
    const error = await demoBehaviour(input, { name: 'validate', attempt: 1 }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(NonRetryableException);
    expect((error as Error).message).toBe('demo input is invalid at fail.#1.mode');
    expect((error as Error).message).not.toContain('SECRET');
  });

  it("keeps the demo's own field names and array indexes", () => {
    expect(inputPosition(['sleepMs', 'my-step'], { sleepMs: { 'my-step': -1 } })).toBe('sleepMs.#0');
    expect(inputPosition(['trail', 2], { trail: ['a', 'b', 3] })).toBe('trail.2');
    expect(inputPosition([], 'x')).toBe('(root)');
  });
});

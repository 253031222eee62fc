import { describe, expect, it } from 'vitest';
import { failureGroup, foldMessage, GROUP_ID_PATTERN } from './failure-group';

const base = { step: 'charge', errorCode: 'DOWNSTREAM_DOWN', terminalReason: 'retry_exhausted', transport: 'REST' };

describe('failure signatures', () => {
  it('folds ids, numbers and quoted values out of the message', () => {
    expect(foldMessage('order-2 failed: HTTP 503 from "payments-eu" after 1500.5 ms (req 9f86d081-884c-4d63-a5b2-3c2c1c8b7e10)')).toBe(
      'order-# failed: HTTP # from "…" after # ms (req <id>)',
    );
    expect(foldMessage("row 'abc' key deadbeefcafe1234 missing")).toBe('row "…" key <id> missing');
  });

  it('gives two executions that failed the same way one stable group id', () => {
    const a = failureGroup({ ...base, errorMessage: 'order-1 timed out after 30000 ms' });
    const b = failureGroup({ ...base, errorMessage: 'order-777 timed out after 29999 ms' });
    expect(a.groupId).toBe(b.groupId);
    expect(a.groupId).toMatch(GROUP_ID_PATTERN);
    expect(a.signature).toEqual({ ...base, message: 'order-# timed out after # ms' });
  });

  it('separates failures that differ in step, code, reason, transport or message shape', () => {
    const id = (over: Partial<typeof base> & { errorMessage?: string }) => failureGroup({ ...base, errorMessage: 'x 1', ...over }).groupId;
    const ids = new Set([
      id({}),
      id({ step: 'notify' }),
      id({ errorCode: 'OTHER' }),
      id({ terminalReason: 'non_retryable' }),
      id({ transport: 'GRPC' }),
      id({ errorMessage: 'y 1' }),
    ]);
    expect(ids.size).toBe(6);
  });
});

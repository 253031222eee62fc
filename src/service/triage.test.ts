import { describe, expect, it } from 'vitest';
import type { TriageSignals } from '../store/signals-store';
import { classify, FIRST_ACTION } from './triage';

const quiet: TriageSignals = {
  executionDlq: { current: 0, previous: 0 },
  itemRejects: { current: 0, previous: 0 },
  executionsSucceeded: { current: 5, previous: 5 },
  checkpointBacklog: { current: 0, previous: 0 },
  dominantDlq: null,
  topFingerprint: null,
};
const withSignals = (change: Partial<TriageSignals>): TriageSignals => ({ ...quiet, ...change });

describe('triage classification', () => {
  it('is healthy when nothing rises, with every signal and its trend', () => {
    const answer = classify(900, withSignals({ executionsSucceeded: { current: 2, previous: 7 } }));
    expect(answer).toEqual({
      windowSeconds: 900,
      classification: 'healthy',
      firstAction: FIRST_ACTION.healthy,
      findings: [],
      signals: {
        executionDlq: { current: 0, previous: 0, trend: 'stable' },
        itemRejects: { current: 0, previous: 0, trend: 'stable' },
        executionsSucceeded: { current: 2, previous: 7, trend: 'falling' },
        checkpointBacklog: { current: 0, previous: 0, trend: 'stable' },
      },
    });
  });

  it('names a growing DLQ systemic, with the dominant errorCode and the first action of its terminalReason', () => {
    const answer = classify(
      900,
      withSignals({
        executionDlq: { current: 4, previous: 1 },
        dominantDlq: { errorCode: 'CONTRACT_MISMATCH', terminalReason: 'non_retryable', envelopes: 3 },
      }),
    );
    expect(answer.classification).toBe('systemic_execution_failure');
    expect(answer.firstAction).toBe(FIRST_ACTION.non_retryable);
    expect(answer.findings[0].detail).toEqual({ dominantErrorCode: 'CONTRACT_MISMATCH', dominantTerminalReason: 'non_retryable', envelopes: 3 });
    expect(
      classify(
        900,
        withSignals({ executionDlq: { current: 1, previous: 0 }, dominantDlq: { errorCode: 'TIMEOUT', terminalReason: 'retry_exhausted', envelopes: 1 } }),
      ).firstAction,
    ).toBe(FIRST_ACTION.retry_exhausted);
  });

  it('does not call a shrinking or steady DLQ systemic', () => {
    expect(classify(900, withSignals({ executionDlq: { current: 3, previous: 3 } })).classification).toBe('healthy');
    expect(classify(900, withSignals({ executionDlq: { current: 1, previous: 9 } })).classification).toBe('healthy');
  });

  it('names a rising checkpoint backlog admission pressure', () => {
    const answer = classify(60, withSignals({ checkpointBacklog: { current: 4, previous: 0 } }));
    expect(answer).toMatchObject({
      classification: 'admission_pressure',
      firstAction: FIRST_ACTION.admission_pressure,
      findings: [{ detail: { backlog: 4 } }],
    });
  });

  it('names rising rejects with stable success data-quality drift, with the top fingerprint share', () => {
    const answer = classify(900, withSignals({ itemRejects: { current: 6, previous: 2 }, topFingerprint: { fingerprint: 'f1', n: 4, total: 6 } }));
    expect(answer).toMatchObject({ classification: 'data_quality_drift', findings: [{ detail: { topFingerprint: 'f1', topFingerprintShare: 0.667 } }] });
  });

  it('does not call rising rejects drift while success falls', () => {
    const answer = classify(900, withSignals({ itemRejects: { current: 6, previous: 2 }, executionsSucceeded: { current: 1, previous: 5 } }));
    expect(answer.classification).toBe('healthy');
  });

  it('lists every finding, the systemic one first', () => {
    const answer = classify(
      900,
      withSignals({
        executionDlq: { current: 2, previous: 0 },
        checkpointBacklog: { current: 3, previous: 1 },
        itemRejects: { current: 6, previous: 2 },
      }),
    );
    expect(answer.findings.map((f) => f.classification)).toEqual(['systemic_execution_failure', 'admission_pressure', 'data_quality_drift']);
    expect(answer.classification).toBe('systemic_execution_failure');
    expect(answer.findings[0].detail).toEqual({ dominantErrorCode: null, dominantTerminalReason: null, envelopes: 0 });
  });
});

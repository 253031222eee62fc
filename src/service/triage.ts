/**
 * Triage over the live signals: three failure channels mean three different problems, so
 * compare the last window with the one before it and say which channel moved.
 *   - a growing Execution DLQ → systemic execution failure (with the dominant errorCode);
 *   - a rising checkpoint backlog → admission pressure before execution started;
 *   - rising item rejects with stable execution success → data-quality / business-rule drift;
 *   - otherwise healthy.
 * Every finding names its first action, from the spec's terminalReason table where it
 * applies. `classify` is pure; `triage` reads the signals (SignalsStore) and classifies.
 */
import type { SignalsStore, TriageSignals, WindowCounts } from '../store/signals-store';

export type Classification = 'systemic_execution_failure' | 'admission_pressure' | 'data_quality_drift' | 'healthy';

export interface Signal extends WindowCounts {
  trend: 'rising' | 'falling' | 'stable';
}

export interface Finding {
  classification: Classification;
  firstAction: string;
  detail: Record<string, unknown>;
}

export interface TriageAnswer {
  windowSeconds: number;
  classification: Classification;
  firstAction: string;
  findings: Finding[];
  signals: { executionDlq: Signal; itemRejects: Signal; executionsSucceeded: Signal; checkpointBacklog: Signal };
}

const trend = ({ current, previous }: WindowCounts): Signal['trend'] => (current > previous ? 'rising' : current < previous ? 'falling' : 'stable');
const signal = (counts: WindowCounts): Signal => ({ current: counts.current, previous: counts.previous, trend: trend(counts) });

export const FIRST_ACTION = {
  retry_exhausted: 'stabilise the dependency/path, then re-drive in bounded batches',
  non_retryable: 'correct the payload/contract issue before replay',
  admission_pressure: 'check orchestration admission (Temporal reachability, admission concurrency) before adding load; nothing has executed yet',
  data_quality_drift: 'inspect the dominant reject fingerprint with the data owners; item re-drive is application-owned',
  healthy: 'none',
} as const;

/** Which channel moved, from the window's signals (the rules listed above). Pure. */
export function classify(windowSeconds: number, input: TriageSignals): TriageAnswer {
  const dlq = signal(input.executionDlq);
  const rejects = signal(input.itemRejects);
  const succeeded = signal(input.executionsSucceeded);
  const backlog = signal(input.checkpointBacklog);
  const findings: Finding[] = [];
  if (dlq.trend === 'rising') {
    const top = input.dominantDlq;
    findings.push({
      classification: 'systemic_execution_failure',
      firstAction: FIRST_ACTION[top?.terminalReason ?? 'retry_exhausted'],
      detail: { dominantErrorCode: top?.errorCode ?? null, dominantTerminalReason: top?.terminalReason ?? null, envelopes: top?.envelopes ?? 0 },
    });
  }
  if (backlog.trend === 'rising')
    findings.push({ classification: 'admission_pressure', firstAction: FIRST_ACTION.admission_pressure, detail: { backlog: backlog.current } });
  // "Stable success": success did not fall while rejects rose.
  if (rejects.trend === 'rising' && succeeded.trend !== 'falling') {
    const top = input.topFingerprint;
    findings.push({
      classification: 'data_quality_drift',
      firstAction: FIRST_ACTION.data_quality_drift,
      detail: { topFingerprint: top?.fingerprint ?? null, topFingerprintShare: top && top.total > 0 ? Number((top.n / top.total).toFixed(3)) : 0 },
    });
  }
  const primary = findings[0] ?? { classification: 'healthy' as const, firstAction: FIRST_ACTION.healthy, detail: {} };
  return {
    windowSeconds,
    classification: primary.classification,
    firstAction: primary.firstAction,
    findings,
    signals: { executionDlq: dlq, itemRejects: rejects, executionsSucceeded: succeeded, checkpointBacklog: backlog },
  };
}

export async function triage(signals: SignalsStore, windowMs: number, tenantId?: string): Promise<TriageAnswer> {
  return classify(windowMs / 1000, await signals.triage(windowMs, tenantId));
}

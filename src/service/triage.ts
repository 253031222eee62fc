/**
 * Triage (spec rule 4) over the live signals: compare the last window with the one
 * before it and classify.
 *   - a growing Execution DLQ → systemic execution failure (with the dominant errorCode);
 *   - a rising checkpoint backlog → admission pressure before execution started;
 *   - rising item rejects with stable execution success → data-quality / business-rule drift;
 *   - otherwise healthy.
 * Every finding names its first action, from the spec's terminalReason table where it
 * applies.
 */
import type { Db } from '../store/db';
import type { TerminalReason } from '../spec-words';

export type Classification = 'systemic_execution_failure' | 'admission_pressure' | 'data_quality_drift' | 'healthy';

interface Signal {
  current: number;
  previous: number;
  trend: 'rising' | 'falling' | 'stable';
}

const trend = (current: number, previous: number): Signal['trend'] => (current > previous ? 'rising' : current < previous ? 'falling' : 'stable');
const signal = (current: number, previous: number): Signal => ({ current, previous, trend: trend(current, previous) });

const FIRST_ACTION = {
  retry_exhausted: 'stabilise the dependency/path, then re-drive in bounded batches',
  non_retryable: 'correct the payload/contract issue before replay',
  admission_pressure: 'check orchestration admission (Temporal reachability, admission concurrency) before adding load; nothing has executed yet',
  data_quality_drift: 'inspect the dominant reject fingerprint with the data owners; item re-drive is application-owned',
  healthy: 'none',
} as const;

export async function triage(db: Db, windowMs: number, tenantId?: string) {
  const seconds = windowMs / 1000;
  const tenant = tenantId ? 'AND tenant_id = $2' : '';
  const params = tenantId ? [seconds, tenantId] : [seconds];
  const windows = async (table: string, extra = '') => {
    const result = await db.query<{ cur: number; prev: number }>(
      `SELECT count(*) FILTER (WHERE created_at > now() - make_interval(secs => $1))::int AS cur,
              count(*) FILTER (WHERE created_at <= now() - make_interval(secs => $1) AND created_at > now() - make_interval(secs => 2 * $1))::int AS prev
       FROM ${table} WHERE created_at > now() - make_interval(secs => 2 * $1) ${tenant} ${extra}`,
      params,
    );
    return signal(result.rows[0].cur, result.rows[0].prev);
  };
  const dlq = await windows('execution_dlq');
  const rejects = await windows('item_reject');
  const successRows = await db.query<{ cur: number; prev: number }>(
    `SELECT count(*) FILTER (WHERE updated_at > now() - make_interval(secs => $1))::int AS cur,
            count(*) FILTER (WHERE updated_at <= now() - make_interval(secs => $1))::int AS prev
     FROM execution_record WHERE status = 'SUCCEEDED' AND updated_at > now() - make_interval(secs => 2 * $1) ${tenant}`,
    params,
  );
  const succeeded = signal(successRows.rows[0].cur, successRows.rows[0].prev);
  const backlogRows = await db.query<{ now: number; start: number }>(
    `SELECT count(*) FILTER (WHERE status = 'PENDING')::int AS now,
            count(*) FILTER (WHERE created_at <= now() - make_interval(secs => $1) AND (admitted_at IS NULL OR admitted_at > now() - make_interval(secs => $1)))::int AS start
     FROM checkpoint_outbox WHERE (status = 'PENDING' OR admitted_at > now() - make_interval(secs => $1)) ${tenant}`,
    params,
  );
  const backlog = signal(backlogRows.rows[0].now, backlogRows.rows[0].start);
  const dominant = await db.query<{ error_code: string; terminal_reason: TerminalReason; n: number }>(
    `SELECT error_code, terminal_reason, count(*)::int AS n FROM execution_dlq
     WHERE created_at > now() - make_interval(secs => $1) ${tenant} GROUP BY error_code, terminal_reason ORDER BY n DESC, error_code LIMIT 1`,
    params,
  );
  const topFingerprint = await db.query<{ fingerprint: string; n: number; total: number }>(
    `SELECT fingerprint, count(*)::int AS n, sum(count(*)) OVER ()::int AS total FROM item_reject
     WHERE created_at > now() - make_interval(secs => $1) ${tenant} GROUP BY fingerprint ORDER BY n DESC LIMIT 1`,
    params,
  );

  const findings: { classification: Classification; firstAction: string; detail: Record<string, unknown> }[] = [];
  if (dlq.trend === 'rising') {
    const top = dominant.rows[0];
    findings.push({
      classification: 'systemic_execution_failure',
      firstAction: FIRST_ACTION[top?.terminal_reason ?? 'retry_exhausted'],
      detail: { dominantErrorCode: top?.error_code ?? null, dominantTerminalReason: top?.terminal_reason ?? null, envelopes: top?.n ?? 0 },
    });
  }
  if (backlog.trend === 'rising') findings.push({ classification: 'admission_pressure', firstAction: FIRST_ACTION.admission_pressure, detail: { backlog: backlog.current } });
  // "Stable success": success did not fall while rejects rose.
  if (rejects.trend === 'rising' && succeeded.trend !== 'falling') {
    const top = topFingerprint.rows[0];
    findings.push({
      classification: 'data_quality_drift',
      firstAction: FIRST_ACTION.data_quality_drift,
      detail: { topFingerprint: top?.fingerprint ?? null, topFingerprintShare: top ? Number((top.n / top.total).toFixed(3)) : 0 },
    });
  }
  const primary = findings[0] ?? { classification: 'healthy' as const, firstAction: FIRST_ACTION.healthy, detail: {} };
  return {
    windowSeconds: seconds,
    classification: primary.classification,
    firstAction: primary.firstAction,
    findings,
    signals: { executionDlq: dlq, itemRejects: rejects, executionsSucceeded: succeeded, checkpointBacklog: backlog },
  };
}

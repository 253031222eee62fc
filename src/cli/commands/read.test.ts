/**
 * The CLI's human output helpers, alone (the commands against the real service are in
 * test/cli/cli.test.ts): evidence as lines, how each run ended, the re-drive command that fits
 * a failure group, triage's next command, skipped counts in words.
 */
import { describe, expect, it } from 'vitest';
import { fields, groupHint, runsWithOutcome, skippedLine, triageNext, withoutShown } from './read';

const group = (terminalReason: string) => ({
  groupId: 'cc87cc0fb204813d',
  signature: { step: 'charge', errorCode: 'CARD_NETWORK_DOWN', terminalReason, transport: 'LOCAL', message: 'down' },
});

describe('CLI output helpers', () => {
  it('prints disposition evidence as indented key: value lines, not one JSON line', () => {
    expect(fields({ workerRecorded: true, workerState: 'DONE', lookup: { url: 'http://w/t', status: 200 }, checkedAt: null }, '  ')).toEqual([
      '  workerRecorded: true',
      '  workerState: DONE',
      '  lookup:',
      '    url: http://w/t',
      '    status: 200',
      '  checkedAt: -',
    ]);
  });

  it('leaves out of the evidence what the remote call line already shows', () => {
    const remoteCall = { transitionKey: 'o:3:1', protocol: 'REST', elapsedMs: 30000 };
    expect(withoutShown({ transitionKey: 'o:3:1', protocol: 'REST', elapsedMs: 30000, workerRecorded: true, workerState: 'DONE' }, remoteCall)).toEqual({
      workerRecorded: true,
      workerState: 'DONE',
    });
    expect(withoutShown({ workerRecorded: false }, null)).toEqual({ workerRecorded: false });
  });

  it("says how each run ended: earlier runs by their last committed attempt, the last by the record's status", () => {
    const story = {
      runs: [
        { runId: 'r1', dispatch: 'start', status: 'STARTED', requestedAt: '2026-01-01T00:00:00.000Z' },
        { runId: 'r2', dispatch: 'redrive', status: 'STARTED', requestedAt: '2026-01-01T00:01:00.000Z' },
        { runId: 'r3', dispatch: 'redrive', status: 'STARTED', requestedAt: '2026-01-01T00:02:00.000Z' },
      ],
      attempts: [
        { committedAt: '2026-01-01T00:00:10.000Z', outcome: 'RETRY_SCHEDULED' },
        { committedAt: '2026-01-01T00:00:20.000Z', outcome: 'FAILED' },
        { committedAt: '2026-01-01T00:01:10.000Z', outcome: 'SUCCEEDED' },
        { committedAt: '2026-01-01T00:02:10.000Z', outcome: 'SUCCEEDED' },
      ],
    };
    expect(runsWithOutcome({ status: 'SUCCEEDED' }, story).map((r) => [r.runId, r.outcome])).toEqual([
      ['r1', 'FAILED'],
      ['r2', 'superseded'],
      ['r3', 'SUCCEEDED'],
    ]);
  });

  it('suggests the re-drive command that fits the group: the intent for a Command step, none otherwise', () => {
    const command = groupHint(group('retry_exhausted'), true);
    expect(command).toContain(' redrive-batch --group cc87cc0fb204813d --reason "…" --allow-failed --intent RETRY_FAILED_COMMAND');
    expect(command).toContain('charge is a Command step');
    const plain = groupHint(group('retry_exhausted'), false);
    expect(plain).not.toContain('--intent');
    expect(plain).toContain('charge is not a Command step');
    expect(groupHint(group('retry_exhausted'), undefined)).toContain('if the dry run refuses items with RETRY_FAILED_COMMAND_INTENT_REQUIRED');
    expect(groupHint(group('non_retryable'), false)).toContain('fix the payload or contract first');
  });

  it("names triage's next command for each class", () => {
    const dlq = { classification: 'systemic_execution_failure', detail: { dominantErrorCode: 'CARD_NETWORK_DOWN', dominantTerminalReason: 'retry_exhausted' } };
    expect(triageNext(dlq, 'acme')).toMatch(/ dlq groups --error-code CARD_NETWORK_DOWN --terminal-reason retry_exhausted /);
    expect(triageNext(dlq, undefined)).toMatch(/ dlq groups --tenant TENANT --error-code/);
    expect(triageNext({ classification: 'data_quality_drift', detail: {} }, 'acme')).toContain('/admin/tenants/acme/rejects');
    expect(triageNext({ classification: 'admission_pressure', detail: {} }, 'acme')).toContain('/readyz');
    expect(triageNext({ classification: 'healthy', detail: {} }, 'acme')).toBeUndefined();
  });

  it('prints skipped counts in words, and "none" for an empty map', () => {
    expect(skippedLine({})).toBe('none');
    expect(skippedLine(undefined)).toBe('none');
    expect(skippedLine({ EXECUTION_SUCCEEDED: 2, VERSION_MISMATCH: 1 })).toBe('2 EXECUTION_SUCCEEDED, 1 VERSION_MISMATCH');
  });
});

describe('the dry run sample', () => {
  it('says "20 of 35" when the sample is a part of what matched, nothing when it is all', async () => {
    const { sampleHeading } = await import('./redrive');
    expect(sampleHeading(20, 35)).toBe('sample: 20 of 35 matching executions\n');
    expect(sampleHeading(6, 6)).toBe('');
  });
});

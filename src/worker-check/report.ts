/** The checker's output: a pass/fail table for people, or one JSON document (`--json`). */
import type { CheckResult } from './checks';

export interface CheckReport {
  protocol: 'REST' | 'GRPC';
  target: string;
  /** true when no check failed (warnings and skips do not fail) */
  passed: boolean;
  checks: CheckResult[];
}

export function reportOf(protocol: 'REST' | 'GRPC', target: string, checks: CheckResult[]): CheckReport {
  return { protocol, target, passed: checks.every((check) => check.status !== 'fail'), checks };
}

const MARK = { pass: 'PASS', fail: 'FAIL', warn: 'WARN', skip: 'SKIP' } as const;

export function formatTable(report: CheckReport): string {
  const idWidth = Math.max(...report.checks.map((check) => check.id.length), 5);
  const lines = [`pipeline-worker-check: ${report.protocol} worker at ${report.target}`, ''];
  lines.push(`${'check'.padEnd(idWidth)}  result  rule / what the worker answered`);
  for (const check of report.checks) {
    lines.push(`${check.id.padEnd(idWidth)}  ${MARK[check.status].padEnd(6)}  ${check.rule}`);
    lines.push(`${''.padEnd(idWidth)}          ${check.detail}`);
  }
  const count = (status: keyof typeof MARK) => report.checks.filter((check) => check.status === status).length;
  lines.push(
    '',
    `${count('pass')} passed, ${count('fail')} failed, ${count('warn')} warnings, ${count('skip')} skipped: ${report.passed ? 'CONFORMS' : 'DOES NOT CONFORM'}`,
  );
  return lines.join('\n');
}

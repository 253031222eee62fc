import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EFFECT_STATUSES, EXECUTION_STATUSES, isOneOf, TERMINAL_REASONS } from './spec-words';

const migrations = join(import.meta.dirname, 'store', 'migrations');
const sql = readdirSync(migrations).sort().map((file) => readFileSync(join(migrations, file), 'utf8')).join('\n');

/** The values a CHECK constraint of the migrations allows, e.g. `execution_record_status_check`. */
function checkValues(constraint: string): string[] {
  const match = new RegExp(`CONSTRAINT ${constraint} CHECK \\(\\w+ IN \\(([^)]*)\\)\\)`).exec(sql);
  if (!match) throw new Error(`constraint ${constraint} not found`);
  return match[1].split(',').map((value) => value.trim().replace(/^'|'$/g, ''));
}

describe('the spec words', () => {
  it('are the values the database accepts, so a word added in one place fails here until the other follows', () => {
    expect(checkValues('execution_record_status_check')).toEqual([...EXECUTION_STATUSES]);
    expect(checkValues('command_effect_status_check')).toEqual([...EFFECT_STATUSES]);
    expect(checkValues('execution_dlq_terminal_reason_check')).toEqual([...TERMINAL_REASONS]);
  });

  it('narrow a string only when it is one of them', () => {
    expect(isOneOf(TERMINAL_REASONS, 'retry_exhausted')).toBe(true);
    expect(isOneOf(TERMINAL_REASONS, 'RETRY_EXHAUSTED')).toBe(false);
    expect(isOneOf(EXECUTION_STATUSES, undefined)).toBe(false);
  });
});

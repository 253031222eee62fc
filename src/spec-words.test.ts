import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EFFECT_STATUSES, EXECUTION_STATUSES, isOneOf, TERMINAL_REASONS } from './spec-words';

const migrations = join(import.meta.dirname, 'store', 'migrations');
const sql = readdirSync(migrations)
  .sort()
  .map((file) => readFileSync(join(migrations, file), 'utf8'))
  .join('\n');

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

/** Every .ts file under src/ except this module and the tests. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') && entry.name !== 'spec-words.ts' ? [path] : [];
  });
}

describe('one home for the spec words', () => {
  it('no other module writes out a list or union of them again (derive it from spec-words.ts)', () => {
    const lists = [
      /'retry_exhausted'\s*[,|]\s*'non_retryable'/,
      /'QUEUED'\s*[,|]\s*'RUNNING'\s*[,|]\s*'SUCCEEDED'/,
      /'SUCCEEDED'\s*[,|]\s*'FAILED_RETRYABLE'\s*[,|]\s*'FAILED_TERMINAL'/,
      /'LOCAL'\s*[,|]\s*'FUNCTION'\s*[,|]\s*'REST'/,
      /'ORDINARY'\s*[,|]\s*'FAILED'\s*[,|]\s*'RETRY_FAILED_COMMAND'/,
    ];
    const src = import.meta.dirname;
    const copies = sources(src).flatMap((file) =>
      readFileSync(file, 'utf8')
        .split('\n')
        .flatMap((line, index) => (lists.some((list) => list.test(line)) ? [`${relative(src, file)}:${index + 1}`] : [])),
    );
    expect(copies).toEqual([]);
  });
});

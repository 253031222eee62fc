/**
 * One list of error codes: ERROR_CODES in src/errors.ts. docs/api.md's error tables must
 * list exactly its HTTP codes with the same statuses, and the OpenAPI document's problem
 * schema must offer exactly them, so neither can drift from the code.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES, STEP_ERROR_CODES, type ErrorCode } from '../../src/errors';
import { ProblemSchema } from '../../src/contract/responses';

/** Codes no HTTP answer carries: the service refuses to start with them. */
const START_UP_ONLY: ErrorCode[] = ['CONFIG_INVALID'];

const docs = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'api.md'), 'utf8');
const documented = new Map([...docs.matchAll(/^\| (\d{3}) \| `([A-Z_]+)` \|/gm)].map((row) => [row[2], Number(row[1])]));

describe('error codes', () => {
  it('docs/api.md lists every HTTP code of ERROR_CODES with its status, and no other', () => {
    const expected = Object.entries(ERROR_CODES)
      .filter(([code]) => !START_UP_ONLY.includes(code as ErrorCode))
      .map(([code, { status }]) => [code, status]);
    expect(Object.fromEntries(documented)).toEqual(Object.fromEntries(expected));
  });

  it("docs/runbook.md names every code the engine gives a failed step, under its terminal reason's section", () => {
    const runbook = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'runbook.md'), 'utf8');
    const section = (reason: string) => runbook.split(/^## /m).find((part) => part.startsWith(`\`terminalReason = ${reason}\``)) ?? '';
    const missing = Object.entries(STEP_ERROR_CODES)
      .filter(([code, { retryable }]) => !section(retryable ? 'retry_exhausted' : 'non_retryable').includes(`\`${code}\``))
      .map(([code]) => code);
    expect(missing).toEqual([]);
  });

  it('the problem+json schema offers exactly the codes of ERROR_CODES', () => {
    expect(ProblemSchema.shape.code.options).toEqual(Object.keys(ERROR_CODES));
  });
});

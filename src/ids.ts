/**
 * Identity rules: tenant and execution ids, the Temporal workflowId derived from them,
 * and the transition identity `executionId:stepIndex:attempt`.
 */
import { z } from 'zod';

/** 1–128 chars of [A-Za-z0-9._-], starting alphanumeric. */
export const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
export const Id = z.string().regex(ID_PATTERN, 'must be 1–128 characters of [A-Za-z0-9._-], starting with a letter or digit');

export function isValidId(value: string): boolean {
  return ID_PATTERN.test(value);
}

/** `/` cannot appear in either id, so the pair maps to one workflowId and back. */
export function workflowIdFor(tenantId: string, executionId: string): string {
  return `pipeline/${tenantId}/${executionId}`;
}

export function transitionKey(executionId: string, stepIndex: number, attempt: number): string {
  return `${executionId}:${stepIndex}:${attempt}`;
}

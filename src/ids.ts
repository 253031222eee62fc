/**
 * Identity rules: tenant and execution ids, the Temporal workflowId derived from them,
 * the transition identity `executionId:stepIndex:attempt`, and its tenant-qualified
 * wire form `{tenantId}/{executionId}:{stepIndex}:{attempt}` (the idempotency key).
 */
import { z } from 'zod';

/** 1–128 chars of [A-Za-z0-9._-], starting alphanumeric. */
export const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
export const Id = z.string().regex(ID_PATTERN, 'must be 1–128 characters of [A-Za-z0-9._-], starting with a letter or digit');

/**
 * A correlationId travels in HTTP headers (`X-Correlation-Id`) and gRPC metadata, which
 * carry printable ASCII only: 1–256 of U+0020–U+007E, no leading or trailing space.
 */
export const CorrelationId = z
  .string()
  .regex(
    /^[\x21-\x7e](?:[\x20-\x7e]{0,254}[\x21-\x7e])?$/,
    'must be 1–256 printable ASCII characters without leading or trailing spaces (it is sent in HTTP headers and gRPC metadata)',
  );

export function isValidId(value: string): boolean {
  return ID_PATTERN.test(value);
}

/** `/` cannot appear in either id, so the pair maps to one workflowId and back. */
export function workflowIdFor(tenantId: string, executionId: string): string {
  return `pipeline/${tenantId}/${executionId}`;
}

/** `workflowIdFor` read back: the ids of a pipeline run's workflow id; undefined for any other workflow id. */
export function idsOfWorkflowId(workflowId: string): { tenantId: string; executionId: string } | undefined {
  const parts = workflowId.split('/');
  return parts.length === 3 && parts[0] === 'pipeline' ? { tenantId: parts[1], executionId: parts[2] } : undefined;
}

export function transitionKey(executionId: string, stepIndex: number, attempt: number): string {
  return `${executionId}:${stepIndex}:${attempt}`;
}

/**
 * The idempotency key a transition carries wherever it leaves the service (REST
 * `Idempotency-Key`, gRPC `idempotency-key`, FUNCTION `invocationId`, LOCAL
 * `ctx.idempotencyKey`): the transition identity qualified by its tenant, because an
 * executionId is unique only within a tenant. `/` appears in neither id, so the key
 * splits back unambiguously. Records, envelopes, events and logs keep `transitionKey`.
 */
export function idempotencyKey(tenantId: string, transitionKey: string): string {
  return `${tenantId}/${transitionKey}`;
}

const ID_SOURCE = ID_PATTERN.source.slice(1, -1);
/** `{tenantId}/{executionId}:{stepIndex}:{attempt}` */
export const IDEMPOTENCY_KEY_PATTERN = new RegExp(`^(${ID_SOURCE})/((${ID_SOURCE}):(\\d{1,9}):(\\d{1,9}))$`);

export interface ParsedIdempotencyKey {
  tenantId: string;
  executionId: string;
  /** the spec's `executionId:stepIndex:attempt` */
  transitionKey: string;
  stepIndex: number;
  attempt: number;
}

/** Splits a tenant-qualified idempotency key; null when it is not one. */
export function parseIdempotencyKey(key: string): ParsedIdempotencyKey | null {
  const match = IDEMPOTENCY_KEY_PATTERN.exec(key);
  if (!match) return null;
  return { tenantId: match[1], transitionKey: match[2], executionId: match[3], stepIndex: Number(match[4]), attempt: Number(match[5]) };
}

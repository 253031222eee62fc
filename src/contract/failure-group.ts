/**
 * Failure signatures: what makes two DLQ envelopes "the same failure" for an operator.
 * The signature is the failed step, its errorCode, terminalReason and transport, and the
 * error message with the parts that differ per execution folded away (quoted values,
 * UUIDs and other ids, numbers). Its group id is a short hash of the signature: stable
 * across processes and releases (as long as this folding does not change), so it can be
 * pasted into a bulk re-drive selection. Pure: no I/O.
 */
import { createHash } from 'node:crypto';

export interface FailureSignature {
  step: string;
  errorCode: string;
  terminalReason: string;
  transport: string;
  /** the error message with ids, numbers and quoted values folded */
  message: string;
}

export interface FailureGroup {
  groupId: string;
  signature: FailureSignature;
}

/** 16 hex characters: the group id format the API accepts. */
export const GROUP_ID_PATTERN = /^[0-9a-f]{16}$/;
const MAX_FOLDED = 200;

/**
 * Folds what varies per execution: quoted values become `"…"`, UUIDs and long hex ids
 * `<id>`, any run of digits (alone or inside a token such as `order-2`) `#`.
 */
export function foldMessage(message: string): string {
  return message
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '"…"')
    .replace(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, '<id>')
    .replace(/\b(?=[0-9a-f]*\d)[0-9a-f]{12,}\b/gi, '<id>')
    .replace(/\d+(?:\.\d+)*/g, '#')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, MAX_FOLDED);
}

export function failureGroup(failure: Omit<FailureSignature, 'message'> & { errorMessage: string }): FailureGroup {
  const signature: FailureSignature = {
    step: failure.step,
    errorCode: failure.errorCode,
    terminalReason: failure.terminalReason,
    transport: failure.transport,
    message: foldMessage(failure.errorMessage),
  };
  const canonical = JSON.stringify([signature.step, signature.errorCode, signature.terminalReason, signature.transport, signature.message]);
  return { groupId: createHash('sha256').update(canonical).digest('hex').slice(0, 16), signature };
}

/**
 * A corrected input for the step a re-drive resumes or a fork starts at: an RFC 7396 merge
 * patch over the step's known input, or a replacement. Checked in this order after every
 * admission check: the caller may repair (admin or repair token, 403), the result is JSON within
 * the input limit (422 INPUT_TOO_LARGE), and matches the step's declared input schema where it
 * has one (422 INPUT_INVALID with the issues). What leaves here for logs, events and metrics is
 * paths and fingerprints only; the values go to the audit row (sealed by the payload codec when
 * it is configured) and, in a dry run, to a token allowed to read payloads.
 */
import type { ZodType } from 'zod';
import { ForbiddenError, PipelineError } from '../errors';
import { issuesOf, MAX_BODY_BYTES } from '../contract/fields';
import { mayRepair, type Principal } from './principal';
import type { AesGcmCodec } from '../temporal/codec';
import { changedPaths, fingerprint, mergePatch } from './merge-patch';

export interface CorrectionRequest {
  inputPatch?: unknown;
  input?: unknown;
}

export interface Correction {
  kind: 'patch' | 'input';
  /** what the caller sent: the patch, or the replacement */
  sent: unknown;
  before: unknown;
  after: unknown;
  changedPaths: string[];
  beforeFingerprint: string;
  afterFingerprint: string;
}

/** The audit row's `repair`: the paths, the fingerprints, and what was sent, sealed when the codec is on. */
export interface RepairAudit {
  kind: 'patch' | 'input';
  changedPaths: string[];
  beforeFingerprint: string;
  afterFingerprint: string;
  /** what was sent, as JSON (`plain`), or sealed by the payload codec (`sealed`: its Payload's metadata and data, base64) */
  sent: { plain: unknown } | { sealed: { metadata: Record<string, string>; data: string } };
  /** fork: the execution and step the input came from */
  from?: { executionId: string; stepIndex: number };
}

export const hasCorrection = (body: CorrectionRequest) => body.inputPatch !== undefined || body.input !== undefined;

/**
 * The corrected input, or null when the request carries none. `before`: the step's known input;
 * `step`: where it runs (its index, name and declared schema).
 */
export function correctInput(
  body: CorrectionRequest,
  before: unknown,
  step: { index: number; name: string; input?: ZodType },
  principal: Principal | undefined,
): Correction | null {
  if (!hasCorrection(body)) return null;
  if (!principal || !mayRepair(principal)) throw new ForbiddenError('correcting an input needs an admin or repair token');
  const kind = body.inputPatch !== undefined ? 'patch' : 'input';
  const sent = kind === 'patch' ? body.inputPatch : body.input;
  const after = kind === 'patch' ? mergePatch(before, sent) : sent;
  const bytes = Buffer.byteLength(JSON.stringify(after ?? null), 'utf8');
  if (bytes > MAX_BODY_BYTES)
    throw new PipelineError(
      `the corrected input of step ${step.index} (${step.name}) is ${bytes} bytes, over the ${MAX_BODY_BYTES}-byte input limit`,
      'INPUT_TOO_LARGE',
    );
  const checked = step.input?.safeParse(after);
  if (checked && !checked.success) {
    throw new PipelineError(`the corrected input of step ${step.index} (${step.name}) does not match the step's declared input schema`, 'INPUT_INVALID', {
      issues: issuesOf(checked.error),
    });
  }
  return { kind, sent, before, after, changedPaths: changedPaths(before, after), beforeFingerprint: fingerprint(before), afterFingerprint: fingerprint(after) };
}

/** What a dry run shows of a correction: paths and fingerprints, and the values only to a token allowed to read payloads. */
export function correctionView(correction: Correction, principal: Principal | undefined) {
  return {
    kind: correction.kind,
    changedPaths: correction.changedPaths,
    beforeFingerprint: correction.beforeFingerprint,
    afterFingerprint: correction.afterFingerprint,
    ...(principal?.readPayloads ? { before: correction.before, after: correction.after } : {}),
  };
}

/** The fields a log line or a history entry may carry about a correction: never a value. */
export const correctionFacts = (correction: Correction) => ({
  correction: correction.kind,
  changedPaths: correction.changedPaths,
  beforeFingerprint: correction.beforeFingerprint,
  afterFingerprint: correction.afterFingerprint,
});

const JSON_PLAIN = new TextEncoder().encode('json/plain');
const b64 = (bytes: Uint8Array | null | undefined) => Buffer.from(bytes ?? new Uint8Array()).toString('base64');

/** The audit row's record of a correction; what was sent is sealed by `codec` when there is one. */
export async function repairAudit(correction: Correction, codec: AesGcmCodec | undefined, from?: RepairAudit['from']): Promise<RepairAudit> {
  let sent: RepairAudit['sent'] = { plain: correction.sent };
  if (codec) {
    const [sealed] = await codec.encode([{ metadata: { encoding: JSON_PLAIN }, data: new TextEncoder().encode(JSON.stringify(correction.sent)) }]);
    sent = { sealed: { metadata: Object.fromEntries(Object.entries(sealed.metadata ?? {}).map(([k, v]) => [k, b64(v)])), data: b64(sealed.data) } };
  }
  const { kind, changedPaths, beforeFingerprint, afterFingerprint } = correction;
  return { kind, changedPaths, beforeFingerprint, afterFingerprint, sent, ...(from ? { from } : {}) };
}

/** What an audit row's `sent` holds, opened by `codec` when sealed (CodecError when it cannot). */
export async function openSent(sent: RepairAudit['sent'], codec: AesGcmCodec | undefined): Promise<unknown> {
  if ('plain' in sent) return sent.plain;
  if (!codec) throw new PipelineError('the audit row is sealed and pipeline.codec.keys is not set here', 'PAYLOAD_UNREADABLE');
  const [opened] = await codec.decode([
    {
      metadata: Object.fromEntries(Object.entries(sent.sealed.metadata).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
      data: Buffer.from(sent.sealed.data, 'base64'),
    },
  ]);
  return JSON.parse(Buffer.from(opened.data ?? new Uint8Array()).toString('utf8'));
}

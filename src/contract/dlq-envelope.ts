/**
 * The Execution DLQ envelope: what a terminal failure writes (with the FAILED commit),
 * what the DLQ API answers and what the broker providers publish. One zod schema; the
 * TypeScript type derives from it, so the document, the API and the code agree.
 */
import { z } from 'zod';
import { TERMINAL_REASONS, TRANSPORTS } from '../spec-words';

export const DlqEnvelope = z
  .object({
    tenantId: z.string(),
    executionId: z.string(),
    executionKey: z.string().nullable(),
    transitionKey: z.string(),
    correlationId: z.string().nullable(),
    resourceType: z.string().nullable(),
    resourceName: z.string().nullable(),
    pipeline: z.string().optional().meta({ description: 'absent on envelopes written before definition versions' }),
    pipelineVersion: z.number().int().optional().meta({ description: 'the definition version the execution failed under' }),
    transport: z.enum(TRANSPORTS),
    platform: z.string(),
    terminalStatus: z.string(),
    createdAtEpochMs: z.number().int(),
    terminalReason: z.enum(TERMINAL_REASONS),
    errorCode: z.string(),
    errorMessage: z.string(),
    retryable: z.boolean(),
    retriesObserved: z.number().int(),
  })
  .meta({ id: 'DlqEnvelope' });
export type DlqEnvelope = z.infer<typeof DlqEnvelope>;

/**
 * Execution DLQ providers, picked by `pipeline.orchestrator.dlq-provider`:
 *   - postgres: the execution_dlq table itself (written with the FAILED commit);
 *   - sqs: an SQS FIFO queue (`dlq-url` = the queue URL), deduplicated by the broker;
 *   - rabbitmq: a durable queue with publisher confirms (`dlq-url` = amqp://…?queue=name).
 * Broker providers are fed by the DLQ relay from the table. Every provider reports its
 * backlog read-only: nothing is ever consumed or deleted.
 */
import { createHash } from 'node:crypto';
import type { DlqEnvelope } from '../store/dlq-store';

export interface DlqProvider {
  readonly name: 'postgres' | 'sqs' | 'rabbitmq';
  /** where to read the DLQ, for docs and logs (no credentials) */
  readonly location: string;
  /** Publishes one envelope; resolves once the broker has it (confirmed). */
  publish(envelope: DlqEnvelope, dedupeId: string): Promise<void>;
  /** Messages in the DLQ, read without consuming. */
  backlog(): Promise<number>;
  close(): Promise<void>;
}

/** The broker dedupe id of an envelope: from its transition identity, within SQS's 128-character limit. */
export function envelopeDedupeId(tenantId: string, transitionKey: string): string {
  return createHash('sha256').update(`${tenantId}\u0000${transitionKey}`).digest('hex');
}

/** A URL for logs and docs: no user, no password. */
export function redactUrl(raw: string): string {
  const url = new URL(raw);
  url.username = '';
  url.password = '';
  return url.toString();
}

/**
 * The DLQ relay, for the broker providers: publishes every envelope of the
 * execution_dlq table that the broker has not confirmed yet, with a dedupe id from its
 * transition identity, and records the confirmation. A failed publish (broker down,
 * connection dropped) is retried on the next pass: no envelope is lost. An envelope
 * already confirmed is never published again; in the window between a broker's confirm
 * and our record of it, SQS FIFO drops the repeat itself and RabbitMQ consumers see the
 * same message id twice (dedupe by it).
 */
import { randomUUID } from 'node:crypto';
import type { Log } from '../log';
import { PeriodicTask } from '../periodic-task';
import type { DlqEnvelope, DlqStore } from '../store/dlq-store';
import { envelopeDedupeId, type DlqProvider } from './provider';
import { errorLine } from '../errors';

const LEASE_MS = 30_000;
/** A failed publish is tried again after this long. */
const REPUBLISH_AFTER_MS = 1000;

export class DlqRelay {
  private readonly owner = `relay-${randomUUID()}`;
  private readonly loop: PeriodicTask;
  /** Fault injection for tests: runs before each publish. */
  beforePublish?: (envelope: DlqEnvelope) => void | Promise<void>;

  constructor(
    private readonly dlq: DlqStore,
    readonly provider: DlqProvider,
    private readonly log: Log,
    intervalMs = 1000,
  ) {
    this.loop = new PeriodicTask('execution_dlq_relay_failed', intervalMs, () => this.publishPending(), log);
  }

  /** One pass: publishes what is due. Returns how many envelopes the broker confirmed. */
  async publishPending(batch = 100): Promise<number> {
    const due = await this.dlq.leaseUnpublished({ batch, leaseMs: LEASE_MS });
    let published = 0;
    for (const row of due) {
      try {
        await this.beforePublish?.(row.envelope);
        await this.provider.publish(row.envelope, envelopeDedupeId(row.tenantId, row.transitionKey));
        await this.dlq.markPublished(row.id);
        published++;
      } catch (err) {
        const message = errorLine(err, 'publish failed');
        this.log.warn({
          event: 'execution_dlq_publish_failed',
          provider: this.provider.name,
          tenantId: row.tenantId,
          transitionKey: row.transitionKey,
          error: message,
        });
        await this.dlq.deferPublish(row.id, message, REPUBLISH_AFTER_MS).catch(() => undefined);
      }
    }
    return published;
  }

  unpublished(): Promise<number> {
    return this.dlq.countUnpublished();
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }
}

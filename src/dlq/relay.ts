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
import type { Db } from '../store/db';
import type { DlqEnvelope } from '../store/dlq-store';
import { envelopeDedupeId, type DlqProvider } from './provider';

const LEASE_MS = 30_000;

export class DlqRelay {
  private readonly owner = `relay-${randomUUID()}`;
  private readonly loop: PeriodicTask;
  /** Fault injection for tests: runs before each publish. */
  beforePublish?: (envelope: DlqEnvelope) => void | Promise<void>;

  constructor(
    private readonly db: Db,
    readonly provider: DlqProvider,
    private readonly log: Log,
    intervalMs = 1000,
  ) {
    this.loop = new PeriodicTask('execution_dlq_relay_failed', intervalMs, () => this.publishPending(), log);
  }

  /** One pass: publishes what is due. Returns how many envelopes the broker confirmed. */
  async publishPending(batch = 100): Promise<number> {
    const due = await this.db.query<{ id: number; tenant_id: string; transition_key: string; envelope: DlqEnvelope }>(
      `UPDATE execution_dlq SET publish_lease_until = now() + ($2::integer * interval '1 millisecond'), publish_attempts = publish_attempts + 1
       WHERE id IN (SELECT id FROM execution_dlq WHERE published_at IS NULL AND (publish_lease_until IS NULL OR publish_lease_until < now())
                    ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED)
       RETURNING id, tenant_id, transition_key, envelope`,
      [batch, LEASE_MS],
    );
    let published = 0;
    for (const row of due.rows.sort((a, b) => Number(a.id) - Number(b.id))) {
      try {
        await this.beforePublish?.(row.envelope);
        await this.provider.publish(row.envelope, envelopeDedupeId(row.tenant_id, row.transition_key));
        await this.db.query(`UPDATE execution_dlq SET published_at = now(), publish_lease_until = NULL, publish_error = NULL WHERE id = $1 AND published_at IS NULL`, [row.id]);
        published++;
      } catch (err) {
        const message = err instanceof Error ? `${err.name}: ${err.message}`.slice(0, 300) : 'publish failed';
        this.log.warn({ event: 'execution_dlq_publish_failed', provider: this.provider.name, tenantId: row.tenant_id, transitionKey: row.transition_key, error: message });
        await this.db
          .query(`UPDATE execution_dlq SET publish_lease_until = now() + interval '1 second', publish_error = $2 WHERE id = $1`, [row.id, message])
          .catch(() => undefined);
      }
    }
    return published;
  }

  async unpublished(): Promise<number> {
    return (await this.db.query<{ n: number }>('SELECT count(*)::int AS n FROM execution_dlq WHERE published_at IS NULL')).rows[0].n;
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }
}

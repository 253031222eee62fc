/**
 * Checkpoint publication: the pre-execution handoff. A producer publishes a checkpoint
 * (a batch of records with a handoff key) through `publish()` or
 * POST /api/tenants/{t}/checkpoints; it lands in a durable outbox in Postgres. The
 * publisher drains the outbox and admits each checkpoint as an execution
 * (executionKey = handoff key, executionId derived from it, so Temporal's workflowId
 * uniqueness backs up the table). A handoff key already seen is suppressed and counted.
 * A failed or slow admission logs `checkpoint_publication_delivery_failure`, keeps the
 * checkpoint, and retries with backoff. These failures are not Execution DLQ events and
 * do not use the Item Reject Sink.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Log } from '../log';
import type { Metrics } from '../metrics';
import { PeriodicTask } from '../periodic-task';
import { retryDelayMs, type Backoff } from '../retry';
import type { PipelineRegistry } from '../pipeline/registry';
import type { CheckpointStore, DueCheckpoint } from '../store/checkpoint-store';
import type { Dispatcher } from '../temporal/dispatcher';
import type { ExecutionService } from './executions';
import type { PublishCheckpointRequest } from '../contract/requests';
import type { PublishOutcome } from '../contract/responses';

export interface CheckpointOptions {
  /** admissions in flight at once; default 8 */
  concurrency: number;
  /** an admission slower than this is logged as a delivery failure (slow); default 5 s */
  slowMs: number;
  /** how often the publisher looks for due checkpoints; default 1 s */
  intervalMs: number;
}

/** The execution id a handoff key maps to: stable, valid, and the same in every process. */
export function checkpointExecutionId(handoffKey: string): string {
  return `ckpt-${createHash('sha256').update(handoffKey).digest('hex').slice(0, 40)}`;
}

const LEASE_MS = 60_000;
/** 500 ms, 1 s, 2 s … capped at 30 s, equal jitter. */
const REDELIVERY_BACKOFF: Backoff = { waitMs: 500, maxBackoffMs: 30_000, jitter: true };

export class CheckpointPublisher {
  private readonly owner = `publisher-${randomUUID()}`;
  private readonly loop: PeriodicTask;

  constructor(
    private readonly outbox: CheckpointStore,
    private readonly registry: PipelineRegistry,
    private readonly executions: ExecutionService,
    private readonly dispatcher: Dispatcher,
    private readonly log: Log,
    private readonly options: CheckpointOptions,
    private readonly metrics?: Metrics,
  ) {
    this.loop = new PeriodicTask('checkpoint_publisher_failed', options.intervalMs, () => this.drainOnce(), log);
  }

  /** Accepts a checkpoint into the outbox. A repeated handoff key is suppressed (and counted). */
  async publish(tenantId: string, request: PublishCheckpointRequest): Promise<PublishOutcome> {
    this.registry.get(request.pipeline);
    const executionId = checkpointExecutionId(request.handoffKey);
    const inserted = await this.outbox.insert({ tenantId, handoffKey: request.handoffKey, pipeline: request.pipeline, records: request.records, executionId });
    if (!inserted) {
      this.metrics?.checkpointDuplicates.inc();
      const existing = await this.outbox.status({ tenantId, handoffKey: request.handoffKey });
      this.log.info({ event: 'checkpoint_duplicate_suppressed', tenantId, handoffKey: request.handoffKey });
      return { handoffKey: request.handoffKey, executionId, duplicate: true, status: existing ?? 'PENDING' };
    }
    this.loop.kick();
    return { handoffKey: request.handoffKey, executionId, duplicate: false, status: 'PENDING' };
  }

  /** One pass over the due checkpoints. Returns how many were admitted. */
  async drainOnce(batch = 100): Promise<number> {
    const due = await this.outbox.leaseDue({ owner: this.owner, leaseMs: LEASE_MS, batch });
    let admitted = 0;
    let next = 0;
    const lanes = Array.from({ length: Math.min(this.options.concurrency, due.length) }, async () => {
      while (next < due.length) {
        const row = due[next++];
        if (await this.admit(row)) admitted++;
      }
    });
    await Promise.all(lanes);
    return admitted;
  }

  private async admit(row: DueCheckpoint): Promise<boolean> {
    const started = Date.now();
    const fields = {
      event: 'checkpoint_publication_delivery_failure',
      tenantId: row.tenant_id,
      handoffKey: row.handoff_key,
      executionId: row.execution_id,
      attempt: row.attempts,
    };
    let reason: string;
    // Counted and logged the moment it becomes slow, not when (if ever) it returns.
    let slow = false;
    const slowTimer = setTimeout(() => {
      slow = true;
      this.metrics?.checkpointDeliveryFailures.inc();
      this.log.warn({ ...fields, reason: 'SLOW_ADMISSION', elapsedMs: Date.now() - started });
    }, this.options.slowMs);
    try {
      const outcome = await this.executions.start(row.tenant_id, {
        pipeline: row.pipeline,
        executionId: row.execution_id,
        executionKey: row.handoff_key,
        input: { handoffKey: row.handoff_key, records: row.records },
      });
      // Admitted = its run has started. A retry finds the execution from the earlier attempt: started
      // if it moved past QUEUED, else start it now (the sweeper may also get there first).
      const running =
        outcome.dispatch === 'started' ||
        (outcome.dispatch === 'existing' &&
          (outcome.record.status !== 'QUEUED' || (await this.dispatcher.dispatch(row.tenant_id, row.execution_id, 'start')).dispatch === 'started'));
      if (running) {
        await this.outbox.markAdmitted({ tenantId: row.tenant_id, handoffKey: row.handoff_key });
        this.metrics?.handoffLatency.observe((Date.now() - new Date(row.created_at).getTime()) / 1000);
        return true;
      }
      reason = 'ORCHESTRATION_START_FAILED';
    } catch (err) {
      reason = err instanceof Error ? err.name : 'ADMISSION_FAILED';
    } finally {
      clearTimeout(slowTimer);
    }
    const jittered = retryDelayMs(REDELIVERY_BACKOFF, row.attempts);
    if (!slow) this.metrics?.checkpointDeliveryFailures.inc(); // a slow attempt was counted already
    this.log.warn({ ...fields, reason, elapsedMs: Date.now() - started, retryInMs: jittered });
    await this.outbox.defer({ tenantId: row.tenant_id, handoffKey: row.handoff_key, retryInMs: jittered, error: reason }).catch(() => undefined);
    return false;
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }
}

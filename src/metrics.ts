/**
 * Prometheus metrics (prom-client), served at GET /metrics. Events are counted where
 * they happen (in this process); backlogs, concentration and saturation are read from
 * Postgres at scrape time (SignalsStore: each read costs what its window or backlog holds,
 * not what history holds), so every process reports the same truth. Labels stay
 * bounded: no execution ids, and at most MAX_CODES distinct error codes (then OTHER).
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { SignalsStore } from './store/signals-store';

const MAX_CODES = 50;
/** A RUNNING bulk re-drive job with items left that processed none for this long counts as stuck. */
export const REDRIVE_JOB_STUCK_AFTER_MS = 15 * 60_000;
const REDRIVE_JOB_ITEM_OUTCOMES = ['admitted', 'skipped', 'deferred', 'admission_failed'] as const;

export class Metrics {
  readonly registry = new Registry();
  private readonly codes = new Set<string>();

  readonly started = new Counter({ name: 'pipeline_executions_started_total', help: 'Executions admitted', registers: [this.registry] });
  readonly succeeded = new Counter({ name: 'pipeline_executions_succeeded_total', help: 'Executions that succeeded', registers: [this.registry] });
  readonly failed = new Counter({
    name: 'pipeline_executions_failed_total',
    help: 'Executions that ended FAILED, by terminalReason and errorCode',
    labelNames: ['terminal_reason', 'error_code'],
    registers: [this.registry],
  });
  readonly retries = new Counter({
    name: 'pipeline_step_retries_total',
    help: 'Retries scheduled, by errorCode (dominant error classes)',
    labelNames: ['error_code'],
    registers: [this.registry],
  });
  readonly rejects = new Counter({
    name: 'pipeline_item_rejects_total',
    help: 'Items rejected to the Item Reject Sink, by errorCode',
    labelNames: ['error_code'],
    registers: [this.registry],
  });
  readonly outcomeUnknown = new Counter({
    name: 'pipeline_remote_outcome_unknown_total',
    help: 'Executions parked as REMOTE_OUTCOME_UNKNOWN',
    labelNames: ['protocol'],
    registers: [this.registry],
  });
  readonly deadlineWarnings = new Counter({
    name: 'pipeline_remote_deadline_warnings_total',
    help: 'remote_transition_deadline_warning events',
    labelNames: ['protocol'],
    registers: [this.registry],
  });
  readonly checkpointDuplicates = new Counter({
    name: 'pipeline_checkpoint_duplicates_suppressed_total',
    help: 'Checkpoints skipped because their handoff key was already seen',
    registers: [this.registry],
  });
  readonly checkpointDeliveryFailures = new Counter({
    name: 'pipeline_checkpoint_delivery_failures_total',
    help: 'Checkpoint admissions that failed, or were slow (counted the moment they passed pipeline.checkpoint.slow-admission); the checkpoint is kept and retried',
    registers: [this.registry],
  });
  readonly handoffLatency = new Histogram({
    name: 'pipeline_checkpoint_handoff_latency_seconds',
    help: 'From checkpoint accepted to execution admitted',
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers: [this.registry],
  });
  readonly retentionDeleted = new Counter({
    name: 'pipeline_retention_deleted_total',
    help: 'Rows deleted by retention, by table',
    labelNames: ['table'],
    registers: [this.registry],
  });
  readonly retentionBacklog = new Gauge<'table'>({
    name: 'pipeline_retention_backlog_rows',
    help: 'Rows past their retention that the last retention pass of this process left (its duty cycle ran out), by table; counted up to 100 batches, 0 when it caught up',
    labelNames: ['table'],
    registers: [this.registry],
  });
  readonly redrives = new Counter({ name: 'pipeline_redrives_total', help: 'Re-drives admitted, by mode', labelNames: ['mode'], registers: [this.registry] });
  readonly redriveJobItems = new Counter<'outcome'>({
    name: 'pipeline_redrive_job_items_total',
    help: "Bulk re-drive job items by outcome: admitted, skipped (refused by the single re-drive's admission), deferred (admission failed, tried again), admission_failed (skipped after its last attempt)",
    labelNames: ['outcome'],
    registers: [this.registry],
  });

  /**
   * `retryLimit`: pipeline.defaults.retry-limit, for retry saturation. `dlqBacklog`: the
   * broker provider's message count (read-only), when the DLQ is not the postgres table.
   */
  constructor(signals: SignalsStore, retryLimit: number, dlqBacklog?: () => Promise<number>) {
    const gauge = (name: string, help: string, read: () => Promise<number>) =>
      new Gauge({
        name,
        help,
        registers: [this.registry],
        async collect() {
          this.set(await read());
        },
      });
    gauge('pipeline_execution_dlq_backlog', "Envelopes in the Execution DLQ (the provider's message count, read without consuming)", () =>
      dlqBacklog ? dlqBacklog() : signals.total('dlq'),
    );
    gauge('pipeline_execution_dlq_unpublished', 'Envelopes a broker DLQ provider has not confirmed yet (0 for postgres)', () =>
      dlqBacklog ? signals.dlqUnpublished() : Promise.resolve(0),
    );
    gauge('pipeline_executions_failed_unredriven', 'FAILED executions not re-driven since', () => signals.total('FAILED'));
    gauge('pipeline_executions_remote_outcome_unknown', 'Executions parked as REMOTE_OUTCOME_UNKNOWN', () => signals.total('REMOTE_OUTCOME_UNKNOWN'));
    gauge('pipeline_item_reject_backlog', 'Item reject envelopes in the sink', () => signals.total('reject'));
    gauge('pipeline_item_reject_top_fingerprint_share', 'Share of the most frequent reject fingerprint in the last hour (0–1)', () =>
      signals.topFingerprintShare(),
    );
    gauge('pipeline_checkpoint_backlog', 'Checkpoints accepted and not yet admitted', () => signals.checkpointsPending());
    gauge('pipeline_checkpoint_lag_seconds', 'Age of the oldest checkpoint not yet admitted', () => signals.checkpointLagSeconds());
    gauge('pipeline_dispatch_lag_seconds', 'Age of the oldest start or re-drive admitted and not yet started in Temporal', () => signals.dispatchLagSeconds());
    // Every outcome from 0, so a rate over it exists before the first job.
    for (const outcome of REDRIVE_JOB_ITEM_OUTCOMES) this.redriveJobItems.inc({ outcome }, 0);
    new Gauge({
      name: 'pipeline_redrive_jobs',
      help: `Unfinished bulk re-drive jobs that need a look, by state: halted (by a canary or haltOn), paused (by an operator), stuck (RUNNING with items left and none processed for ${REDRIVE_JOB_STUCK_AFTER_MS / 60_000} minutes)`,
      labelNames: ['state'],
      registers: [this.registry],
      async collect() {
        const jobs = await signals.redriveJobsNeedingAttention(REDRIVE_JOB_STUCK_AFTER_MS);
        for (const [state, n] of Object.entries(jobs)) this.set({ state }, n);
      },
    });
    gauge('pipeline_retry_saturation', 'Executions waiting on a retry with at most one retry left under the default retry limit', () =>
      signals.waitingOnRetry(Math.max(1, retryLimit)),
    );
  }

  /**
   * `pipeline_worker_cached_workflows{task_queue}`: runs each of this process's workers holds in its
   * workflow cache, read at scrape time (registered only in a process that runs the workers).
   */
  observeWorkflowCache(read: () => { taskQueue: string; cached: number }[]): void {
    new Gauge<'task_queue'>({
      name: 'pipeline_worker_cached_workflows',
      help: "Runs this process's workers hold in their workflow caches, by task queue (each bounded by pipeline.orchestrator.worker.max-cached-workflows)",
      labelNames: ['task_queue'],
      registers: [this.registry],
      collect() {
        for (const { taskQueue, cached } of read()) this.set({ task_queue: taskQueue }, cached);
      },
    });
  }

  /** Error codes as label values: the first MAX_CODES seen, then OTHER. */
  code(errorCode: string): string {
    if (this.codes.has(errorCode)) return errorCode;
    if (this.codes.size >= MAX_CODES) return 'OTHER';
    this.codes.add(errorCode);
    return errorCode;
  }
}

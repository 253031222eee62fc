/**
 * Retention: a background pass (a PeriodicTask in the worker process, off every request
 * and step path) that deletes rows past their configured retention, in bounded batches
 * (`pipeline.retention.batch-size` rows per statement, at most MAX_BATCHES per kind per
 * pass), and counts what it deleted in `pipeline_retention_deleted_total{table}`. Safe to
 * run in several processes at once: each batch locks its rows with SKIP LOCKED
 * (RetentionStore), so two deleters never take the same row, and their counts add up.
 */
import type { Config } from '../config/config';
import type { Log } from '../log';
import type { Metrics } from '../metrics';
import { PeriodicTask } from '../periodic-task';
import type { Db } from '../store/db';
import { RetentionStore, type Deleted } from '../store/retention-store';
import { SIGNAL_MINUTES_EXACT_MS, SIGNAL_MINUTES_KEPT_MS } from '../store/signals-store';
import { purgeDedupe } from '../worker-kit/dedupe-store';

/** Batches per kind per pass: a pass stays bounded however far behind it is; the next pass continues. */
const MAX_BATCHES = 20;

export interface RetentionPolicy {
  succeededExecutionsMs: number;
  dlqMs: number;
  redriveAuditMs: number;
  rejectsMs: number;
  checkpointsMs: number;
  dispatchMs: number;
  dedupeMs: number;
  batchSize: number;
}

export function retentionPolicy(config: Config): RetentionPolicy {
  return {
    succeededExecutionsMs: config['pipeline.retention.succeeded-executions'],
    dlqMs: config['pipeline.retention.dlq'],
    redriveAuditMs: config['pipeline.retention.redrive-audit'],
    rejectsMs: config['pipeline.retention.rejects'],
    checkpointsMs: config['pipeline.retention.checkpoints'],
    dispatchMs: config['pipeline.retention.dispatch'],
    dedupeMs: config['pipeline.retention.dedupe'],
    batchSize: config['pipeline.retention.batch-size'],
  };
}

export class Retention {
  private readonly store: RetentionStore;
  private readonly loop: PeriodicTask;

  constructor(
    private readonly db: Db,
    private readonly policy: RetentionPolicy,
    private readonly log: Log,
    private readonly metrics?: Metrics,
    intervalMs = 60_000,
  ) {
    this.store = new RetentionStore(db);
    this.loop = new PeriodicTask('retention_pass_failed', intervalMs, () => this.pass(), log);
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /**
   * One pass over every kind, each in batches until a batch comes back short (or
   * MAX_BATCHES ran). Envelopes go before the audit, so an audit row freed by an envelope's
   * expiry can go in the same pass. Returns the rows deleted, by table.
   */
  async pass(): Promise<Deleted> {
    const p = this.policy;
    const n = p.batchSize;
    const kinds: (() => Promise<Deleted>)[] = [
      () => this.store.succeededExecutions(p.succeededExecutionsMs, n),
      () => this.store.redrivenEnvelopes(p.dlqMs, n),
      () => this.store.redriveAudit(p.redriveAuditMs, n),
      // A bulk job explains the re-drives it made: it goes with the audit's retention.
      () => this.store.finishedJobItems(p.redriveAuditMs, n),
      () => this.store.finishedJobs(p.redriveAuditMs, n),
      () => this.store.itemRejects(p.rejectsMs, n),
      () => this.store.admittedCheckpoints(p.checkpointsMs, n),
      () => this.store.startedDispatches(p.dispatchMs, n),
      () => this.store.signalMinutes(SIGNAL_MINUTES_KEPT_MS, n),
      () => this.store.compactSignalMinutes(SIGNAL_MINUTES_EXACT_MS, n),
      () => this.store.emptyGroupDays(2 * 86_400_000, n),
      async () => ({ transition_worker_dedupe: await purgeDedupe(this.db, p.dedupeMs, n) }),
    ];
    const started = Date.now();
    const total: Deleted = {};
    for (const batch of kinds) {
      for (let i = 0; i < MAX_BATCHES; i++) {
        const deleted = await batch();
        for (const [table, count] of Object.entries(deleted)) {
          total[table] = (total[table] ?? 0) + count;
          if (count > 0) this.metrics?.retentionDeleted.inc({ table }, count);
        }
        // The first table of a batch is the one its limit applies to.
        if ((Object.values(deleted)[0] ?? 0) < n) break;
      }
    }
    if (Object.values(total).some((count) => count > 0)) {
      this.log.info({
        event: 'retention_pass',
        deleted: Object.fromEntries(Object.entries(total).filter(([, count]) => count > 0)),
        durationMs: Date.now() - started,
      });
    }
    return total;
  }
}

/**
 * Retention: a background pass (a PeriodicTask in the worker process, off every request
 * and step path) that deletes rows past their configured retention, in bounded batches
 * (`pipeline.retention.batch-size` rows per statement), and counts what it deleted in
 * `pipeline_retention_deleted_total{table}`. A pass that finds a backlog keeps going, in
 * rounds of one batch per kind still behind, until no kind is behind or its share of the
 * interval (`pipeline.retention.duty-cycle`) is used; then the next pass starts one interval
 * after this one started, and `pipeline_retention_backlog_rows{table}` says what is left.
 * Safe to run in several processes at once: each batch locks its rows with SKIP LOCKED
 * (RetentionStore), so two deleters never take the same row, and their counts add up.
 */
import type { Config } from '../config/config';
import type { Log } from '../log';
import type { Metrics } from '../metrics';
import { PeriodicTask, type NextPass } from '../periodic-task';
import type { Db } from '../store/db';
import { RetentionStore, type Deleted, type RetentionKind } from '../store/retention-store';
import { SIGNAL_MINUTES_EXACT_MS, SIGNAL_MINUTES_KEPT_MS } from '../store/signals-store';
import { purgeDedupe } from '@pipeline-orchestrator/worker-kit';

/** The backlog gauge counts at most this many batches' worth of rows per kind (a count that stops there costs at most that many index entries). */
const BACKLOG_CAP_BATCHES = 100;

export interface RetentionPolicy {
  succeededExecutionsMs: number;
  dlqMs: number;
  redriveAuditMs: number;
  rejectsMs: number;
  checkpointsMs: number;
  dispatchMs: number;
  dedupeMs: number;
  batchSize: number;
  /** share of each interval a pass may use while behind, (0, 1] */
  dutyCycle: number;
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
    dutyCycle: config['pipeline.retention.duty-cycle'],
  };
}

/** One kind of row: its batch, and (store kinds) how to count what is left of it. */
interface Kind {
  table: string;
  batch: () => Promise<Deleted>;
  pending?: (cap: number) => Promise<number>;
}

/** What a pass did: rows deleted by table, the rounds it ran, and the kinds still behind when it stopped. */
export interface PassResult {
  deleted: Deleted;
  rounds: number;
  behind: string[];
}

export class Retention {
  private readonly store: RetentionStore;
  private readonly loop: PeriodicTask;
  /** rows past retention left after the last pass, by table (counted up to a cap) */
  readonly backlog = new Map<string, number>();

  constructor(
    private readonly db: Db,
    private readonly policy: RetentionPolicy,
    private readonly log: Log,
    private readonly metrics?: Metrics,
    private readonly intervalMs = 60_000,
  ) {
    this.store = new RetentionStore(db);
    this.loop = new PeriodicTask('retention_pass_failed', intervalMs, () => this.scheduled(), log);
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** A pass of the loop: while behind, the next starts one interval after this one started (so it works at most duty-cycle of each interval). */
  private async scheduled(): Promise<NextPass | undefined> {
    const started = Date.now();
    const { behind } = await this.run();
    return behind.length > 0 ? { nextInMs: this.intervalMs - (Date.now() - started) } : undefined;
  }

  /** One pass (see `run`); returns the rows deleted, by table. */
  async pass(): Promise<Deleted> {
    return (await this.run()).deleted;
  }

  private kinds(): Kind[] {
    const p = this.policy;
    const n = p.batchSize;
    const kind = (table: RetentionKind, retentionMs: number, batch: (ms: number, limit: number) => Promise<Deleted>): Kind => ({
      table,
      batch: () => batch(retentionMs, n),
      pending: (cap) => this.store.pending(table, retentionMs, cap),
    });
    const s = this.store;
    return [
      kind('execution_record', p.succeededExecutionsMs, (ms, limit) => s.succeededExecutions(ms, limit)),
      kind('execution_dlq', p.dlqMs, (ms, limit) => s.redrivenEnvelopes(ms, limit)),
      kind('redrive_audit', p.redriveAuditMs, (ms, limit) => s.redriveAudit(ms, limit)),
      // A bulk job explains the re-drives it made: it goes with the audit's retention.
      kind('redrive_job_item', p.redriveAuditMs, (ms, limit) => s.finishedJobItems(ms, limit)),
      kind('redrive_job', p.redriveAuditMs, (ms, limit) => s.finishedJobs(ms, limit)),
      kind('item_reject', p.rejectsMs, (ms, limit) => s.itemRejects(ms, limit)),
      kind('checkpoint_outbox', p.checkpointsMs, (ms, limit) => s.admittedCheckpoints(ms, limit)),
      kind('execution_dispatch', p.dispatchMs, (ms, limit) => s.startedDispatches(ms, limit)),
      kind('signal_minute', SIGNAL_MINUTES_KEPT_MS, (ms, limit) => s.signalMinutes(ms, limit)),
      kind('signal_minute_compacted', SIGNAL_MINUTES_EXACT_MS, (ms, limit) => s.compactSignalMinutes(ms, limit)),
      kind('dlq_group_day', 2 * 86_400_000, (ms, limit) => s.emptyGroupDays(ms, limit)),
      { table: 'transition_worker_dedupe', batch: async () => ({ transition_worker_dedupe: await purgeDedupe(this.db, p.dedupeMs, n) }) },
    ];
  }

  /**
   * One pass. The first round runs one batch of every kind, in order (envelopes before the
   * audit, job items before their jobs, so rows freed by one kind go in the same pass); each
   * later round runs one batch of every kind whose last batch was full (it is behind), while
   * the pass has used less than duty-cycle × interval. Round by round, one kind far behind
   * does not starve the others. Kinds still behind when it stops are counted (up to
   * BACKLOG_CAP_BATCHES × batch-size rows) for the backlog gauge; the others have none.
   */
  async run(): Promise<PassResult> {
    const budgetMs = this.intervalMs * this.policy.dutyCycle;
    const started = Date.now();
    const total: Deleted = {};
    let round = this.kinds();
    let rounds = 0;
    while (round.length > 0 && (rounds === 0 || Date.now() - started < budgetMs)) {
      rounds++;
      const behind: Kind[] = [];
      for (const [i, kind] of round.entries()) {
        if (rounds > 1 && Date.now() - started >= budgetMs) {
          behind.push(...round.slice(i)); // not run again this pass: still behind
          break;
        }
        const deleted = await kind.batch();
        for (const [table, count] of Object.entries(deleted)) {
          total[table] = (total[table] ?? 0) + count;
          if (count > 0) this.metrics?.retentionDeleted.inc({ table }, count);
        }
        // The first table of a batch is the one its limit applies to.
        if ((Object.values(deleted)[0] ?? 0) >= this.policy.batchSize) behind.push(kind);
      }
      round = behind;
    }
    this.backlog.clear();
    for (const kind of this.kinds()) if (kind.pending) this.backlog.set(kind.table, 0);
    for (const kind of round) if (kind.pending) this.backlog.set(kind.table, await kind.pending(BACKLOG_CAP_BATCHES * this.policy.batchSize));
    for (const [table, rows] of this.backlog) this.metrics?.retentionBacklog.set({ table }, rows);
    const behind = round.map((kind) => kind.table);
    if (Object.values(total).some((count) => count > 0) || behind.length > 0) {
      this.log.info({
        event: 'retention_pass',
        deleted: Object.fromEntries(Object.entries(total).filter(([, count]) => count > 0)),
        rounds,
        behind: Object.fromEntries(round.map((kind) => [kind.table, this.backlog.get(kind.table) ?? null])),
        durationMs: Date.now() - started,
      });
    }
    return { deleted: total, rounds, behind };
  }
}

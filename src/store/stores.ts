/**
 * Every store on one database, built in one place: the composition root (src/runtime.ts)
 * calls this once for the service's pool and once for the bulk jobs' own pool, and hands the
 * stores to the services that use them; no service builds a store from another store's `db`.
 */
import type { Db } from './db';
import { CheckpointStore } from './checkpoint-store';
import { DefinitionStore } from './definition-store';
import { DlqStore } from './dlq-store';
import { EffectStore } from './effect-store';
import { ExecutionStore } from './execution-store';
import { FailureGroupStore } from './failure-group-store';
import { HistoryStore } from './history-store';
import { RedriveJobStore } from './redrive-job-store';
import { RejectStore } from './reject-store';
import { SignalsStore } from './signals-store';

export interface Stores {
  executions: ExecutionStore;
  effects: EffectStore;
  dlq: DlqStore;
  definitions: DefinitionStore;
  jobs: RedriveJobStore;
  checkpoints: CheckpointStore;
  rejects: RejectStore;
  groups: FailureGroupStore;
  history: HistoryStore;
  signals: SignalsStore;
}

export function createStores(db: Db): Stores {
  return {
    executions: new ExecutionStore(db),
    effects: new EffectStore(db),
    dlq: new DlqStore(db),
    definitions: new DefinitionStore(db),
    jobs: new RedriveJobStore(db),
    checkpoints: new CheckpointStore(db),
    rejects: new RejectStore(db),
    groups: new FailureGroupStore(db),
    history: new HistoryStore(db),
    signals: new SignalsStore(db),
  };
}

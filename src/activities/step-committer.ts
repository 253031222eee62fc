/**
 * The committer port of a step attempt: the reads its rules need (step-rules.ts) and the one
 * `commit` that applies a decided outcome. Every commit is a single conditional statement
 * fenced by the step key (step, committed attempt, run): it moves the record only while it is
 * RUNNING at exactly that step and attempt and owned by that run, else it reports
 * `committed: false` and the rules read the record again (`decideLostCommit`).
 * `storeCommitter` implements it with the execution and effect stores.
 */
import type { ClaimOutcome, EffectClaim, EffectStore } from '../store/effect-store';
import type {
  CommitResult,
  EffectChange,
  ExecutionRecord,
  ExecutionStore,
  ForeignRunNote,
  RejectBatch,
  RemoteCall,
  RunOutcome,
  RunStart,
  StepKey,
  TerminalFailure,
} from '../store/execution-store';

/** One step outcome to commit, with the Command effect change it carries. */
export type StepCommit =
  | { kind: 'succeeded'; key: StepKey; output: unknown; effect?: EffectChange; rejects?: RejectBatch }
  | { kind: 'retry'; key: StepKey; delayMs: number; errorCode: string; errorMessage: string; effect?: EffectChange }
  | { kind: 'failed'; key: StepKey; failure: TerminalFailure; effect?: EffectChange }
  | { kind: 'outcome_unknown'; key: StepKey; errorCode: string; errorMessage: string; remoteCall: RemoteCall; effect?: EffectChange };

export type { ForeignRunNote };

export interface StepCommitter {
  read(tenantId: string, executionId: string): Promise<ExecutionRecord | null>;
  /** the run takes the record (first step; fenced by its dispatch), or reads it */
  begin(start: RunStart): Promise<ExecutionRecord | null>;
  lastOutcomeOfRun(q: { tenantId: string; executionId: string; runId: string | null }): Promise<RunOutcome | null>;
  noteForeignRun(note: ForeignRunNote): Promise<void>;
  /** notes a delivery of the identity before it is sent: whether one was noted before */
  noteRemoteDelivery(key: StepKey): Promise<{ earlier: boolean }>;
  claimEffect(claim: EffectClaim): Promise<ClaimOutcome>;
  /** whether the step has a Command effect retained */
  effectRetained(tenantId: string, executionId: string, stepIndex: number): Promise<boolean>;
  commit(change: StepCommit): Promise<CommitResult>;
}

export function storeCommitter(store: ExecutionStore, effects: EffectStore): StepCommitter {
  return {
    read: (tenantId, executionId) => store.get(tenantId, executionId),
    begin: (start) => store.begin(start),
    lastOutcomeOfRun: (q) => store.lastOutcomeOfRun(q),
    noteForeignRun: (note) => store.noteForeignRun(note),
    noteRemoteDelivery: (key) => store.noteRemoteDelivery(key),
    claimEffect: (claim) => effects.claim(claim),
    effectRetained: async (tenantId, executionId, stepIndex) => (await effects.get(tenantId, executionId, stepIndex)) !== null,
    commit(change) {
      switch (change.kind) {
        case 'succeeded':
          return store.commitSucceeded({ ...change.key, output: change.output, effect: change.effect, rejects: change.rejects });
        case 'retry':
          return store.commitRetry({
            ...change.key,
            delayMs: change.delayMs,
            errorCode: change.errorCode,
            errorMessage: change.errorMessage,
            effect: change.effect,
          });
        case 'failed':
          return store.commitFailed({ ...change.key, failure: change.failure, effect: change.effect });
        case 'outcome_unknown':
          return store.commitOutcomeUnknown({
            ...change.key,
            errorCode: change.errorCode,
            errorMessage: change.errorMessage,
            remoteCall: change.remoteCall,
            effect: change.effect,
          });
      }
    },
  };
}

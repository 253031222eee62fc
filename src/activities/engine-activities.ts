/**
 * The engine's activities, built by a factory so tests can hand in other parts.
 *
 * Each activity is a thin adapter (step-attempt.ts, step-ending.ts) over the step attempt's
 * rules (step-rules.ts, pure, table-tested), committing through the committer port
 * (step-committer.ts) that the execution and effect stores implement.
 */
import type { StepRequest, StepResult } from '../workflows/types';
import { engineOf, type EngineDeps } from './engine-context';
import { runStep, stepByType } from './step-attempt';
import { abandonStep, endRun, type RunEnder } from './step-ending';
import type { AbandonRequest } from './step-rules';

export type { EngineDeps } from './engine-context';
export type { AbandonRequest } from './step-rules';

export type EngineActivities = ReturnType<typeof createActivities>;

/** The engine's activities, registered on the worker (every member is an activity). */
export function createActivities(deps: EngineDeps) {
  const engine = engineOf(deps);
  return {
    runStep: (req: StepRequest): Promise<StepResult> => runStep(engine, req),
    abandonStep: (req: AbandonRequest) => abandonStep(engine, req),
    default: (req: StepRequest): Promise<StepResult> => stepByType(engine, req),
  };
}

/** Ends the record of a run Temporal closed without the engine (service/run-end-watch.ts), as an abandoned step's is ended. */
export function createRunEnder(deps: EngineDeps): RunEnder {
  const engine = engineOf(deps);
  return (run) => endRun(engine, run);
}

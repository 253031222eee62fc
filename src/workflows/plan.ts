/**
 * A run's step plan in the workflow's argument. Pure logic: the workflow bundle imports
 * this file, so it must not import anything from Node.
 */
import type { PipelineRunInput, StepPlan, StepPlanEntry } from './types';

/**
 * The plan written compactly: the first step's settings become the defaults and every
 * entry keeps only what differs from them (usually nothing but its name). The plan is part
 * of the workflow's argument, stored in the run's first history event and sent to the worker
 * with it; a 5-step plan with the same settings in every step shrinks from ~750 bytes to ~200.
 */
export function compactPlan(plan: StepPlan[]): { stepDefaults?: Partial<StepPlan>; steps: StepPlanEntry[] } {
  if (plan.length === 0) return { steps: [] };
  const keys = [...new Set(plan.flatMap((step) => Object.keys(step) as (keyof StepPlan)[]))].filter((key) => key !== 'name');
  // Only settings every step defines can be defaults: one a step leaves undefined (a LOCAL step's
  // in-progress budget) must read back as undefined, and JSON cannot write "absent" over a default.
  const shared = keys.filter((key) => plan.every((step) => step[key] !== undefined));
  const stepDefaults: Partial<StepPlan> = Object.fromEntries(shared.map((key) => [key, plan[0][key]]));
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  const steps = plan.map((step) => {
    const entry: StepPlanEntry = { name: step.name };
    for (const key of keys) {
      if (step[key] !== undefined && !(shared.includes(key) && same(step[key], stepDefaults[key]))) Object.assign(entry, { [key]: step[key] });
    }
    return entry;
  });
  return { stepDefaults, steps };
}

/** Step `index` of a run's plan, whole: its entry over the run's defaults (runs without defaults carry whole entries). */
export function planStep(run: Pick<PipelineRunInput, 'steps' | 'stepDefaults'>, index: number): StepPlan {
  return { ...run.stepDefaults, ...run.steps[index] } as StepPlan;
}

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
  const { name: _name, ...stepDefaults } = plan[0];
  const keys = new Set(plan.flatMap((step) => Object.keys(step) as (keyof StepPlan)[]));
  // A setting a step leaves undefined while the defaults define it cannot be written as "absent": keep that plan whole.
  if (plan.some((step) => [...keys].some((key) => step[key] === undefined && (stepDefaults as Partial<StepPlan>)[key] !== undefined))) return { steps: plan };
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  const steps = plan.map((step) => {
    const entry: StepPlanEntry = { name: step.name };
    for (const key of keys) {
      if (key !== 'name' && !same(step[key], (stepDefaults as Partial<StepPlan>)[key])) Object.assign(entry, { [key]: step[key] });
    }
    return entry;
  });
  return { stepDefaults, steps };
}

/** Step `index` of a run's plan, whole: its entry over the run's defaults (runs without defaults carry whole entries). */
export function planStep(run: Pick<PipelineRunInput, 'steps' | 'stepDefaults'>, index: number): StepPlan {
  return { ...run.stepDefaults, ...run.steps[index] } as StepPlan;
}

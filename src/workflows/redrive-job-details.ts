/**
 * What the Temporal UI shows as a bulk re-drive job's "current details": the job as the
 * store has it at the workflow's latest read (status, progress, rate, a halt or pause and
 * why, who started it and why), and the CLI commands to inspect and control it. The
 * workflow sets it after every read of the job (setCurrentDetails: no history event, no
 * command, so no patch). Pure: the workflow bundle imports this file.
 */
import type { JobTickState } from '../service/redrive-job-ticks';
import { YIELD, yieldSlowed, type Yield } from './redrive-job-policy';

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/**
 * How what the service writes names the CLI (a job's details in the Temporal UI; a Reset run's
 * failure message says the same): the form that runs as printed from the product's checkout, as
 * the README runs it, with the settings the CLI finds there (.data/admin-token, PIPELINE_URL,
 * the config file). The service cannot know how an operator elsewhere starts it.
 */
export const SERVICE_CLI = 'npx pipeline-admin';

export function jobCurrentDetails(tenantId: string, jobId: string, state: JobTickState, yielding: Yield | null = null): string {
  const cli = (command: string) => `\`${SERVICE_CLI} jobs ${command} ${jobId} --tenant ${tenantId}\``;
  const total = state.processed + state.remaining;
  const lines: string[] = [];
  const last = state.lastControl;
  if (state.status === 'GONE') {
    lines.push('**Status GONE**: the job row no longer exists in the store (retention removed it); this workflow has ended.');
    return lines.join('\n\n');
  }
  if (state.status === 'PAUSED' && state.haltReason) lines.push(`**Status PAUSED: halted by the system**: ${state.haltReason}`);
  else if (state.status === 'PAUSED')
    lines.push(
      `**Status PAUSED** by ${last?.action === 'pause' ? last.principal : 'an operator'}${last?.action === 'pause' && last.reason ? `: ${last.reason}` : ''}`,
    );
  else if (state.status === 'ABORTED')
    lines.push(
      `**Status ABORTED** by ${last?.action === 'abort' ? last.principal : 'an operator'}${last?.action === 'abort' && last.reason ? `: ${last.reason}` : ''}`,
    );
  else if (state.status === 'FAILED') lines.push(`**Status FAILED**${last?.action === 'fail' && last.reason ? `: ${last.reason}` : ''}`);
  else lines.push(`**Status ${state.status}**`);
  // A finished job's workflow reads the job no more: its runs still running then end after it, so the counts say when they held.
  const finished = state.status === 'COMPLETED' || state.status === 'ABORTED' || state.status === 'FAILED';
  if (finished && state.running > 0) lines.push(`**When it ended** ${state.running} re-driven run(s) were still running; their outcomes since: ${cli('show')}`);
  lines.push(
    `**Progress**${finished ? ' at its end' : ''} ${state.processed} of ${plural(total, 'item')} processed (${state.admitted} admitted, ${state.processed - state.admitted} skipped), ${state.remaining} remaining; ` +
      `re-driven runs: ${state.running} running, ${state.succeeded} succeeded, ${state.failedAgain} failed again, ${state.remoteOutcomeUnknown} outcome unknown`,
  );
  lines.push(
    `**Rate** at most ${state.ratePerSecond}/s, at most ${state.batchSize} in flight${state.canary !== null ? `; canary of ${state.canary} first` : ''}${state.unavailable ? '; waiting: an item could not be admitted (Temporal or Postgres did not answer)' : ''}`,
  );
  if (yielding && yielding.rate < state.ratePerSecond) lines.push(`**Yielding to live traffic** ${yieldingText(state.ratePerSecond, yielding)}`);
  if (state.startedBy) lines.push(`**Started by** ${state.startedBy.principal}: ${state.startedBy.reason}`);
  lines.push(`**Inspect** ${cli('show')}`);
  if (state.status === 'PAUSED') lines.push(`**Then** ${cli('resume')} or ${cli('abort')}`);
  else if (state.status === 'RUNNING')
    lines.push(
      `**Control** ${cli('pause')} or ${cli('abort')} (Request Cancellation here aborts it too; Terminate leaves it for the service to mark FAILED: docs/runbook.md)`,
    );
  return lines.join('\n\n');
}

/**
 * The job's `PipelineJobStatus` search attribute: its status, with a job its canary or haltOn
 * paused told apart as HALTED (it waits for an operator's look); none for a row gone from the store.
 */
export function jobSearchStatus(state: Pick<JobTickState, 'status' | 'haltReason'>): string | undefined {
  if (state.status === 'GONE') return undefined;
  if (state.status === 'PAUSED' && state.haltReason) return 'HALTED';
  return state.status;
}

/**
 * Why a job yielding to live traffic admits below its asked rate (the Temporal UI's details,
 * the API's `heldBack`, the CLI): backing off while its admissions are slow, or speeding up.
 */
export function yieldingText(asked: number, yielding: Pick<Yield, 'rate' | 'quietestMs' | 'latestMs'>): string {
  const now = `at most ${yielding.rate}/s of the ${asked}/s asked`;
  const ms = (value: number | null) => `${Math.round(value ?? 0)} ms`;
  if (yieldSlowed(yielding))
    return `${now}: its admissions take ${ms(yielding.latestMs)}, over ${YIELD.slowerThan}× its quietest (${ms(yielding.quietestMs)}), so it backs off (pipeline.redrive-job.yield-to-live)`;
  if (yielding.quietestMs === null)
    return `${now}: it starts at a fifth of the asked rate and speeds up while its admissions stay quick (pipeline.redrive-job.yield-to-live)`;
  return `${now}: it speeds up while its admissions take at most ${YIELD.fasterThan}× its quietest (${ms(yielding.quietestMs)}; latest ${ms(yielding.latestMs)}) (pipeline.redrive-job.yield-to-live)`;
}

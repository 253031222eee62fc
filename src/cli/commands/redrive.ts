/**
 * The commands that change something: a single re-drive (reads the version itself, shows
 * the dry run, asks, follows the run), a bulk re-drive job (dry run, asks, follows it with a
 * progress bar; Ctrl-C offers to pause it), and pause / resume / abort of a job.
 */
import { readFileSync } from 'node:fs';
import { cli } from '../invoked';
import { SingleBar } from 'cli-progress';
import type { AdminClient, OkBody } from '../client';
import { ACTIVE_EXECUTION_STATUSES, isOneOf, TERMINAL_REASONS, type ConfirmedDisposition, type RedriveIntent } from '../../spec-words';
import { CliError } from '../exit-codes';
import { choose, confirm, emit, note, sleep, table, type Io } from '../io';
import { jobLine, type JobView } from './read';

type RecordView = OkBody<'GET /admin/tenants/{tenantId}/executions/{executionId}'>;
/** An execution's address in the API: its tenant and id. */
type ExecutionParams = { tenantId: string; executionId: string };

export interface FollowOptions {
  /** stop following after this many seconds (the job or run goes on) */
  followTimeout: number;
  /** poll interval, ms */
  pollMs: number;
}

export async function redriveOne(
  client: AdminClient,
  io: Io,
  executionId: string,
  options: {
    reason: string;
    allowFailed?: boolean;
    /** commander holds these two to their choices (main.ts) */
    intent?: RedriveIntent;
    confirmedDisposition?: ConfirmedDisposition;
    overrideEvidence?: boolean;
    /** a JSON file holding an RFC 7396 merge patch for the resumed step's input */
    patch?: string;
    /** a JSON file holding the resumed step's whole input */
    input?: string;
    dryRun?: boolean;
    yes?: boolean;
    follow: boolean;
  } & FollowOptions,
): Promise<void> {
  const params = { tenantId: client.tenant, executionId };
  const correction = correctionFlags(options);
  const record = await client.call('GET /admin/tenants/{tenantId}/executions/{executionId}', { params });
  const body = {
    ...correction,
    expectedVersion: record.version,
    reason: options.reason,
    allowFailed: options.allowFailed === true,
    ...(options.intent ? { intent: options.intent } : {}),
    ...(options.confirmedDisposition ? { confirmedDisposition: options.confirmedDisposition } : {}),
    ...(options.overrideEvidence ? { overrideEvidence: true as const } : {}),
  };
  const redrive = 'POST /admin/tenants/{tenantId}/executions/{executionId}/redrive';
  const plan = await client.call(redrive, { params, query: { dryRun: 'true' }, body }, { expect: 200 });
  if (!plan.admitted) {
    if (io.json) emit(io, { dryRun: plan }, () => '');
    throw new CliError(
      `${executionId} would be refused: ${plan.status} ${plan.code}: ${cliWords(plan.detail)}${refusalHint(plan.code, options)}`,
      'REFUSED',
      plan.code,
    );
  }
  note(
    io,
    `${executionId} is ${record.status} at version ${record.version}: the re-drive resumes at step ${plan.resumeStepIndex} as attempt ${plan.attempt} (mode ${plan.mode}${plan.effectStatus ? `, Command effect ${plan.effectStatus}` : ''}, pipeline v${plan.pipelineVersion}).`,
  );
  if (plan.correction) note(io, correctionLines(plan.correction));
  if (options.dryRun) {
    emit(io, { dryRun: plan }, () => `${executionId}: would be re-driven (dry run: nothing changed)`);
    return;
  }
  if (!options.yes && !(await confirm(io, `Re-drive ${executionId}?`))) throw new CliError('not re-driven: you said no', 'DECLINED');
  const accepted = await client.call(redrive, { params, body }, { expect: 202 });
  note(io, `admitted: redriveId ${accepted.redriveId}, version ${accepted.version}, run ${accepted.runId ?? '(starting: the sweeper starts it)'}`);
  const final = options.follow ? await followRecord(client, io, params, options) : null;
  // One line says how it ended (stdout, the result); a failure's error line says only what to do next.
  emit(
    io,
    { dryRun: plan, accepted, final },
    () =>
      `${executionId}: ${final ? `${final.status}${final.lastErrorCode ? ` (${final.lastErrorCode})` : ''} at version ${final.version}` : 'QUEUED'} (redriveId ${accepted.redriveId})`,
  );
  if (final && final.status !== 'SUCCEEDED')
    throw new CliError(`the re-driven run did not succeed; see why: ${cli()} executions show ${executionId}`, 'NOT_SUCCEEDED');
}

/** `--patch file` / `--input file` as the body's inputPatch / input (USAGE when both, or a file that is not JSON). */
export function correctionFlags(options: { patch?: string; input?: string }): { inputPatch?: unknown; input?: unknown } {
  if (options.patch && options.input) throw new CliError('give --patch or --input, not both', 'USAGE');
  const read = (flag: string, file: string) => {
    try {
      return JSON.parse(readFileSync(file, 'utf8')) as unknown;
    } catch (err) {
      throw new CliError(`--${flag} ${file}: ${err instanceof Error ? err.message : String(err)} (a JSON file expected)`, 'USAGE');
    }
  };
  if (options.patch) return { inputPatch: read('patch', options.patch) };
  if (options.input) return { input: read('input', options.input) };
  return {};
}

/** A corrected input as the dry run answered it: the paths and fingerprints, and the values when the token may read them. */
export function correctionLines(
  c: NonNullable<Extract<OkBody<'POST /admin/tenants/{tenantId}/executions/{executionId}/redrive', 200>, { admitted: true }>['correction']>,
): string {
  const lines = [
    `corrected input (${c.kind}): changes ${c.changedPaths.length ? c.changedPaths.join(', ') : 'nothing'}; fingerprint ${c.beforeFingerprint} → ${c.afterFingerprint}`,
  ];
  if (c.after !== undefined) lines.push(`  before: ${JSON.stringify(c.before)}`, `  after:  ${JSON.stringify(c.after)}`);
  else lines.push('  (values shown only to a token with readPayloads)');
  return lines.join('\n');
}

/** The API's advice names request fields; the CLI's user needs the flags. */
function cliWords(detail: string | undefined): string {
  return (detail ?? '')
    .replace(/send "overrideEvidence": true/g, 'add --override-evidence')
    .replace(/"overrideEvidence": true/g, '--override-evidence')
    .replace(/needs allowFailed=true/g, 'needs --allow-failed')
    .replace(/needs intent=RETRY_FAILED_COMMAND/g, 'needs --intent RETRY_FAILED_COMMAND');
}

/** What to add to the command for a refusal a flag answers. */
function refusalHint(code: string, options: { allowFailed?: boolean; intent?: string }): string {
  if (code === 'ALLOW_FAILED_REQUIRED' && !options.allowFailed) return ' (add --allow-failed)';
  if (code === 'RETRY_FAILED_COMMAND_INTENT_REQUIRED' && !options.intent)
    return ' (add --intent RETRY_FAILED_COMMAND to retry the failed Command step on purpose)';
  return '';
}

async function followRecord(client: AdminClient, io: Io, params: ExecutionParams, options: FollowOptions): Promise<RecordView> {
  const deadline = Date.now() + options.followTimeout * 1000;
  // Ctrl-C stops following; the admitted run goes on.
  let interrupted = false;
  const onSigint = () => {
    interrupted = true;
  };
  process.on('SIGINT', onSigint);
  let last = '';
  try {
    for (;;) {
      const record = await client.call('GET /admin/tenants/{tenantId}/executions/{executionId}', { params });
      if (!isOneOf(ACTIVE_EXECUTION_STATUSES, record.status)) return record;
      if (interrupted) throw new CliError(`stopped following; the re-driven run goes on (${cli()} executions show ${record.executionId})`, 'DECLINED');
      const now = `${record.status} step ${record.currentStepIndex} attempt ${record.attempt}`;
      if (now !== last) note(io, `  ${now}`);
      last = now;
      if (Date.now() > deadline)
        throw new CliError(
          `still ${record.status} after ${options.followTimeout} s; it goes on (${cli()} executions show ${record.executionId})`,
          'UNAVAILABLE',
        );
      await sleep(options.pollMs);
    }
  } finally {
    process.off('SIGINT', onSigint);
  }
}

export interface BatchOptions extends FollowOptions {
  group?: string;
  errorCode?: string;
  terminalReason?: string;
  step?: string;
  from?: string;
  to?: string;
  ids?: string;
  reason: string;
  allowFailed?: boolean;
  /** commander holds it to its choices (main.ts) */
  intent?: RedriveIntent;
  rate?: string;
  batchSize?: string;
  canary?: string;
  dryRun?: boolean;
  yes?: boolean;
  follow: boolean;
}

function numberFlag(name: string, value: string | undefined, integer: boolean): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isFinite(n) || (integer && !Number.isInteger(n)))
    throw new CliError(`--${name} ${value}: must be ${integer ? 'a whole number' : 'a number'}`, 'USAGE');
  return n;
}

export function batchRequest(options: BatchOptions) {
  const terminalReason = options.terminalReason;
  if (terminalReason !== undefined && !isOneOf(TERMINAL_REASONS, terminalReason))
    throw new CliError(`--terminal-reason ${terminalReason}: one of ${TERMINAL_REASONS.join(', ')}`, 'USAGE');
  const given = {
    groupId: options.group,
    errorCode: options.errorCode,
    terminalReason,
    step: options.step,
    from: options.from,
    to: options.to,
  };
  const filter = Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined)) as Partial<typeof given>;
  if (options.ids && Object.keys(filter).length > 0)
    throw new CliError('give --ids or filters (--group, --error-code, --terminal-reason, --step, --from, --to), not both', 'USAGE');
  if (!options.ids && Object.keys(filter).length === 0)
    throw new CliError(
      'select what to re-drive: --group <id> (from `dlq groups`), --error-code, --terminal-reason, --step, --from/--to, or --ids a,b,c',
      'USAGE',
    );
  const selection = options.ids
    ? {
        executionIds: options.ids
          .split(',')
          .map((id) => id.trim())
          .filter(Boolean),
      }
    : filter;
  return {
    selection,
    reason: options.reason,
    allowFailed: options.allowFailed === true,
    ...(options.intent ? { intent: options.intent } : {}),
    ...(options.rate !== undefined ? { ratePerSecond: numberFlag('rate', options.rate, false) } : {}),
    ...(options.batchSize !== undefined ? { batchSize: numberFlag('batch-size', options.batchSize, true) } : {}),
    ...(options.canary !== undefined ? { canary: numberFlag('canary', options.canary, true) } : {}),
  };
}

/**
 * The bulk dry run judges up to 10,000 executions in one call: it waits ten times --timeout
 * (5 min by default, at most 10), and says so first when the machine may take a while.
 */
export const DRY_RUN_TIMEOUT_FACTOR = 10;

export async function redriveBatch(client: AdminClient, io: Io, options: BatchOptions): Promise<void> {
  const body = batchRequest(options);
  const timeoutMs = Math.min(600_000, client.settings.timeoutMs * DRY_RUN_TIMEOUT_FACTOR);
  note(io, `judging the selection (dry run; waits up to ${Math.round(timeoutMs / 1000)} s)…`);
  const params = { tenantId: client.tenant };
  const plan = await client.call('POST /admin/tenants/{tenantId}/redrive-jobs', { params, query: { dryRun: 'true' }, body }, { timeoutMs, expect: 200 });
  const refused =
    Object.entries(plan.refused)
      .map(([code, n]) => `${n} ${code}`)
      .join(', ') || 'none';
  const excluded = Object.entries(plan.excluded)
    .map(([code, n]) => `${n} ${code}`)
    .join(', ');
  note(
    io,
    `${plan.matched} executions match; ${plan.wouldAdmit} would be re-driven, refused: ${refused}${excluded ? `; left out: ${excluded}` : ''}. At ${plan.ratePerSecond}/s with at most ${plan.batchSize} in flight: about ${Math.ceil(plan.estimatedSeconds)} s.`,
  );
  if (options.dryRun) emit(io, plan, () => sampleHeading(plan.sample.length, plan.matched) + sampleTable(plan.sample));
  const hint =
    Object.keys(plan.refused)
      .map((code) => refusalHint(code, options))
      .find(Boolean) ?? '';
  if (hint) note(io, `to re-drive the refused ones too:${hint.replace(/^ \((.*)\)$/, ' $1')}`);
  if (plan.wouldAdmit === 0) throw new CliError(`nothing to re-drive: every matching execution would be refused${hint}`, 'REFUSED');
  if (options.dryRun) return;
  if (!options.yes && !(await confirm(io, `Start a bulk re-drive of ${plan.matched} executions${body.canary ? ` (canary of ${body.canary} first)` : ''}?`))) {
    throw new CliError('no job started: you said no', 'DECLINED');
  }
  const job = await client.call('POST /admin/tenants/{tenantId}/redrive-jobs', { params, body }, { expect: 202 });
  note(io, `job ${job.jobId} started (Temporal workflow ${job.workflowId}${job.dispatch === 'pending' ? ', start pending: the sweeper starts it' : ''})`);
  const final = options.follow ? await followJob(client, io, job.jobId, options) : job;
  emit(io, final, () => jobLine(final));
  judgeJob(final);
}

/** Says when the sample is a part of what matched ("20 of 35"), so the table is not read as the whole plan. */
export function sampleHeading(shown: number, matched: number): string {
  return shown < matched ? `sample: ${shown} of ${matched} matching executions\n` : '';
}

/** The dry run's sample plan, one row per execution. */
function sampleTable(sample: OkBody<'POST /admin/tenants/{tenantId}/redrive-jobs', 200>['sample']): string {
  return table(
    sample.map((item) => ({
      ...item,
      verdict: item.admitted ? `re-drive from step ${item.resumeStepIndex} as attempt ${item.attempt} (${item.mode})` : `${item.code}: ${item.detail}`,
    })),
    [
      ['executionId', 'EXECUTION'],
      ['expectedVersion', 'VERSION'],
      ['verdict', 'PLAN'],
    ],
  );
}

/** Exit 0 only for a job that completed with no item failed again. */
function judgeJob(job: JobView): void {
  if (job.status === 'PAUSED')
    throw new CliError(
      `job ${job.jobId} is PAUSED${job.haltReason ? `: halted, ${job.haltReason}` : ''} at ${countsLine(job)}; look at what failed (${cli()} dlq groups), then either resume with ${cli()} jobs resume ${job.jobId} or abort with ${cli()} jobs abort ${job.jobId} --reason …`,
      'NOT_SUCCEEDED',
    );
  if (job.status === 'ABORTED') throw new CliError(`job ${job.jobId} was aborted`, 'NOT_SUCCEEDED');
  if (job.status === 'FAILED') throw new CliError(`job ${job.jobId} FAILED: ${job.failureReason}`, 'NOT_SUCCEEDED');
  if (job.status === 'COMPLETED' && job.counts.failedAgain + job.counts.remoteOutcomeUnknown > 0) {
    throw new CliError(
      `job ${job.jobId} completed, but ${job.counts.failedAgain} item(s) failed again and ${job.counts.remoteOutcomeUnknown} parked as REMOTE_OUTCOME_UNKNOWN`,
      'NOT_SUCCEEDED',
    );
  }
}

/** Where the job stands, in one line: what a held or finished job had done. */
function countsLine(job: JobView): string {
  const c = job.counts;
  return `${c.processed}/${c.selected} processed (${c.admitted} admitted, ${c.skipped} skipped; ${c.succeeded} succeeded, ${c.failedAgain} failed again, ${c.running} still running)`;
}

/**
 * Ctrl-C while following: hold the job first (a pause, at once: no item is admitted while the
 * operator reads), print where it stopped, then ask what next. Resume goes on following;
 * abort ends the job (runs already admitted finish); anything else, end of input or a second
 * Ctrl-C leaves it paused.
 */
async function holdAndAsk(
  client: AdminClient,
  io: Io,
  jobId: string,
  params: { tenantId: string; jobId: string },
  asking: (controller: AbortController) => void,
): Promise<'resumed' | 'left paused' | 'aborted' | 'already finished'> {
  let held: JobView;
  try {
    held = await client.call('POST /admin/tenants/{tenantId}/redrive-jobs/{jobId}/pause', { params, body: { reason: 'held from pipeline-admin (Ctrl-C)' } });
  } catch (err) {
    if (err instanceof CliError && err.apiCode === 'JOB_FINISHED') {
      const job = await client.call('GET /admin/tenants/{tenantId}/redrive-jobs/{jobId}', { params });
      note(io, `\njob ${jobId} had already finished ${job.status}: ${countsLine(job)}`);
      return 'already finished';
    }
    throw err;
  }
  note(io, `\njob ${jobId} held (${held.status}${held.haltReason ? `, halted: ${held.haltReason}` : ''}) at ${countsLine(held)}; no further item is admitted.`);
  const controller = new AbortController();
  asking(controller);
  const answer = await choose(io, 'Resume, stay paused, or abort? [r/P/a]', ['r', 'p', 'a'] as const, 'p', controller.signal);
  if (answer === 'r') {
    const resumed = await client.call('POST /admin/tenants/{tenantId}/redrive-jobs/{jobId}/resume', {
      params,
      body: { reason: 'resumed from pipeline-admin after Ctrl-C' },
    });
    note(io, `job ${jobId} ${resumed.status} again`);
    return 'resumed';
  }
  if (answer === 'a') {
    const aborted = await client.call('POST /admin/tenants/{tenantId}/redrive-jobs/{jobId}/abort', {
      params,
      body: { reason: 'aborted from pipeline-admin after Ctrl-C' },
    });
    note(io, `job ${jobId} ${aborted.status} at ${countsLine(aborted)}; runs already admitted finish on their own`);
    return 'aborted';
  }
  note(io, `job ${jobId} stays PAUSED; resume with: ${cli()} jobs resume ${jobId}   (or abort: ${cli()} jobs abort ${jobId} --reason …)`);
  return 'left paused';
}

/**
 * Follows a job until it is finished (COMPLETED or ABORTED with no run in flight) or
 * paused, with a progress bar on a terminal and a line per change otherwise. Ctrl-C holds
 * the job at once (a pause), then asks whether to resume, stay paused or abort.
 */
export async function followJob(client: AdminClient, io: Io, jobId: string, options: FollowOptions): Promise<JobView> {
  const params = { tenantId: client.tenant, jobId };
  const tty = Boolean((io.err as NodeJS.WriteStream).isTTY) && !io.json;
  const bar = tty
    ? new SingleBar(
        {
          format: 'processed {bar} {value}/{total} | admitted {admitted} skipped {skipped} failed again {failedAgain} running {running} | {rate} | {etaApi}',
          hideCursor: true,
          barCompleteChar: '\u2588',
          barIncompleteChar: '\u2591',
        },
        undefined,
      )
    : undefined;
  let interrupted = false;
  // A Ctrl-C while the question waits answers it: the job stays paused.
  let prompting: AbortController | undefined;
  const onSigint = () => {
    if (prompting) prompting.abort();
    interrupted = true;
  };
  process.on('SIGINT', onSigint);
  let last = '';
  const deadline = Date.now() + options.followTimeout * 1000;
  try {
    let started = false;
    for (;;) {
      if (interrupted) {
        bar?.stop();
        const next = await holdAndAsk(client, io, jobId, params, (controller) => (prompting = controller));
        prompting = undefined;
        interrupted = false;
        if (next !== 'resumed') throw new CliError(`stopped following job ${jobId} (Ctrl-C): ${next}`, 'DECLINED');
        started = false; // a fresh bar below the question
      }
      const job = await client.call('GET /admin/tenants/{tenantId}/redrive-jobs/{jobId}', { params });
      const c = job.counts;
      const rate = job.rate.achieved === null ? `${job.rate.asked}/s asked` : `${job.rate.achieved}/s`;
      // The service's ETA (it knows the pace and what is left), not one guessed from this terminal's polls.
      const etaApi = job.etaSeconds === null ? (job.status === 'PAUSED' ? 'paused' : 'ETA unknown yet') : `ETA ${Math.ceil(job.etaSeconds)}s`;
      const payload = { admitted: c.admitted, skipped: c.skipped, failedAgain: c.failedAgain, running: c.running, rate, etaApi };
      if (bar) {
        if (!started) bar.start(c.selected, c.processed, payload);
        else bar.setTotal(c.selected);
        started = true;
        bar.update(c.processed, payload);
      }
      const finished = (job.status === 'COMPLETED' || job.status === 'ABORTED' || job.status === 'FAILED') && c.running === 0;
      if (!bar) {
        // A line per change; a job already over at the first look is said once, by the result line.
        const line = jobLine(job);
        if (line !== last && !(last === '' && (finished || job.status === 'PAUSED'))) note(io, `  ${line}`);
        last = line;
      }
      if (finished || job.status === 'PAUSED') {
        bar?.stop();
        return job;
      }
      if (Date.now() > deadline) {
        bar?.stop();
        throw new CliError(`job ${jobId} still ${job.status} after ${options.followTimeout} s; it goes on (${cli()} jobs show ${jobId})`, 'UNAVAILABLE');
      }
      await sleep(options.pollMs);
    }
  } finally {
    process.off('SIGINT', onSigint);
  }
}

/** `jobs show <id> --follow`: the progress bar of a job already running, with redrive-batch's exit codes. */
export async function jobFollow(client: AdminClient, io: Io, jobId: string, options: FollowOptions): Promise<void> {
  const final = await followJob(client, io, jobId, options);
  emit(io, final, () => jobLine(final));
  judgeJob(final);
}

export async function jobControl(
  client: AdminClient,
  io: Io,
  action: 'pause' | 'resume' | 'abort',
  jobId: string,
  options: { reason?: string },
): Promise<void> {
  const job = await client.call(`POST /admin/tenants/{tenantId}/redrive-jobs/{jobId}/${action}`, {
    params: { tenantId: client.tenant, jobId },
    body: options.reason ? { reason: options.reason } : {},
  });
  emit(io, job, () => jobLine(job));
}

/**
 * The read commands: the DLQ and its failure groups, an execution (record, effects, story),
 * bulk re-drive jobs, triage. Each prints the API's JSON with --json.
 */
import { cli, shellWord, tokenWord } from '../invoked';
import type { AdminClient, Answer, OkBody } from '../client';
import type { ExecutionRecordView } from '../../contract/responses';

/** A bulk re-drive job as the API answers it. */
export type JobView = OkBody<'GET /admin/tenants/{tenantId}/redrive-jobs/{jobId}'>;
import { emit, table, type Io } from '../io';

/** Human output's last line for a page with more: the flag that reads the next one. */
const more = (nextCursor: string | null) => (nextCursor ? `\n(more: add --cursor ${nextCursor})` : '');

export async function dlqList(
  client: AdminClient,
  io: Io,
  options: { terminalReason?: string; errorCode?: string; limit?: string; cursor?: string },
): Promise<void> {
  const query = { terminalReason: options.terminalReason, errorCode: options.errorCode, limit: options.limit, cursor: options.cursor };
  const page = await client.call('GET /admin/tenants/{tenantId}/dlq', { params: { tenantId: client.tenant }, query });
  emit(
    io,
    page,
    () =>
      table(
        page.items.map((item) => ({
          id: item.id,
          executionId: item.envelope.executionId,
          transitionKey: item.envelope.transitionKey,
          terminalReason: item.envelope.terminalReason,
          errorCode: item.envelope.errorCode,
          redriven: item.redriven,
          at: new Date(item.envelope.createdAtEpochMs).toISOString(),
        })),
        [
          ['id', 'ID'],
          ['executionId', 'EXECUTION'],
          ['transitionKey', 'TRANSITION'],
          ['terminalReason', 'REASON'],
          ['errorCode', 'CODE'],
          ['redriven', 'REDRIVEN'],
          ['at', 'AT'],
        ],
      ) + more(page.nextCursor),
  );
}

export async function dlqGroups(client: AdminClient, io: Io, options: { terminalReason?: string; errorCode?: string; limit?: string }): Promise<void> {
  const query = { terminalReason: options.terminalReason, errorCode: options.errorCode, limit: options.limit };
  const groups = await client.call('GET /admin/tenants/{tenantId}/dlq/groups', { params: { tenantId: client.tenant }, query });
  const hinted = io.json ? [] : groups.items.slice(0, HINTED_GROUPS);
  const hints = await Promise.all(hinted.map(async (g) => groupHint(g, await groupIsCommand(client, g))));
  if (groups.items.length > hinted.length && hinted.length > 0) hints.push(`  (the other groups: the same, with their own --group)`);
  emit(
    io,
    groups,
    () =>
      table(
        groups.items.map((g) => ({
          groupId: g.groupId,
          count: g.count,
          step: g.signature.step,
          errorCode: g.signature.errorCode,
          terminalReason: g.signature.terminalReason,
          trend: `${g.lastHour.trend} (${g.lastHour.count}/h)`,
          lastSeen: g.lastSeen,
          message: g.signature.message,
        })),
        [
          ['groupId', 'GROUP'],
          ['count', 'COUNT'],
          ['step', 'STEP'],
          ['errorCode', 'CODE'],
          ['terminalReason', 'REASON'],
          ['trend', 'LAST HOUR'],
          ['lastSeen', 'LAST SEEN'],
          ['message', 'MESSAGE'],
        ],
      ) + (hints.length ? `\n\nRe-drive a group (a dry run first; it asks before it starts):\n${hints.join('\n')}` : ''),
  );
}

/** How many groups `dlq groups` works out a re-drive command for (each takes a few reads). */
export const HINTED_GROUPS = 5;

/**
 * Whether a group's step is a Command step: read from one of its executions (a DLQ envelope
 * of the group's code and reason whose execution's history names the group, then that
 * execution's Command effects). `undefined` when no execution of it is found.
 */
/** A failure group as `dlq groups` answers it. */
type Group = OkBody<'GET /admin/tenants/{tenantId}/dlq/groups'>['items'][number];
/** What a re-drive hint reads of a group. */
type GroupSignature = Pick<Group, 'groupId'> & { signature: Pick<Group['signature'], 'step' | 'errorCode' | 'terminalReason'> };

async function groupIsCommand(client: AdminClient, group: GroupSignature): Promise<boolean | undefined> {
  const tenantId = client.tenant;
  const query = { errorCode: group.signature.errorCode, terminalReason: group.signature.terminalReason, limit: '20' };
  const page = await client.call('GET /admin/tenants/{tenantId}/dlq', { params: { tenantId }, query });
  const tried = new Set<string>();
  for (const item of page.items) {
    const executionId: string = item.envelope.executionId;
    if (tried.has(executionId) || tried.size >= 3) continue;
    tried.add(executionId);
    const params = { tenantId, executionId };
    const story = await client.call('GET /admin/tenants/{tenantId}/executions/{executionId}/history', { params });
    if (!story.dlq.some((d) => d.groupId === group.groupId)) continue;
    const effects = await client.call('GET /admin/tenants/{tenantId}/executions/{executionId}/effects', { params });
    return effects.items.some((e) => e.stepName === group.signature.step);
  }
  return undefined;
}

/** The re-drive command that fits a group: a Command step needs the intent, a data failure a fix first. */
export function groupHint(group: GroupSignature, command: boolean | undefined): string {
  const base = `${cli()} redrive-batch --group ${group.groupId} --reason "…" --allow-failed`;
  const step = group.signature.step;
  const lines: string[] = [];
  if (command === true) lines.push(`${base} --intent RETRY_FAILED_COMMAND`, `    ${step} is a Command step: its failed effect is retried on purpose`);
  else if (command === false) lines.push(base, `    ${step} is not a Command step`);
  else lines.push(base, `    add --intent RETRY_FAILED_COMMAND if the dry run refuses items with RETRY_FAILED_COMMAND_INTENT_REQUIRED (a Command step)`);
  if (group.signature.terminalReason === 'non_retryable')
    lines.push('    non_retryable: fix the payload or contract first; a re-drive runs the same input again');
  return [`  ${group.groupId}  ${lines[0]}`, ...lines.slice(1)].join('\n');
}

export async function executionShow(client: AdminClient, io: Io, executionId: string): Promise<void> {
  const params = { tenantId: client.tenant, executionId };
  const record = await client.call('GET /admin/tenants/{tenantId}/executions/{executionId}', { params });
  const [effects, story] = await Promise.all([
    client.call('GET /admin/tenants/{tenantId}/executions/{executionId}/effects', { params }),
    client.call('GET /admin/tenants/{tenantId}/executions/{executionId}/history', { params }),
  ]);
  emit(io, { record, effects: effects.items, history: story }, () => {
    const lines = [
      `${record.executionId}  ${record.status}  version ${record.version}  pipeline ${record.pipeline} v${record.pipelineVersion}  step ${record.currentStepIndex} attempt ${record.attempt}`,
      record.terminalReason ? `failed: ${record.terminalReason} ${record.lastErrorCode ?? ''} at step ${record.failedStepIndex}` : '',
      record.remoteCall
        ? `remote call: ${record.remoteCall.transitionKey} ${record.remoteCall.protocol} ${record.remoteCall.target} (elapsed ${record.remoteCall.elapsedMs} ms of ${record.remoteCall.deadlineMs})`
        : '',
      ...(record.disposition ? ['disposition evidence:', ...fields(withoutShown(record.disposition, record.remoteCall), '  ')] : []),
      record.pendingStart
        ? `start not seen yet: ${record.pendingStart.dispatchId === 'start' ? 'start' : `re-drive ${record.pendingStart.dispatchId}`} requested ${record.pendingStart.requestedAt}, ${record.pendingStart.startAttempts} start attempts${record.pendingStart.lastError ? `; last error: ${record.pendingStart.lastError}` : ''}`
        : '',
      '',
      'Runs:',
      table(runsWithOutcome(record, story), [
        ['runId', 'RUN'],
        ['dispatch', 'KIND'],
        ['status', 'START'],
        ['requestedAt', 'REQUESTED'],
        ['outcome', 'ENDED'],
      ]),
      ...((story.refusedRuns ?? []).length
        ? [
            '',
            'Runs the orchestrator did not start (a Reset in the Temporal UI or CLI; they ran no step):',
            table(story.refusedRuns, [
              ['runId', 'RUN'],
              ['recordStatus', 'RECORD WAS'],
              ['refusedAt', 'AT'],
            ]),
          ]
        : []),
      '',
      'Committed attempts:',
      table(story.attempts ?? [], [
        ['transitionKey', 'TRANSITION'],
        ['step', 'STEP'],
        ['outcome', 'OUTCOME'],
        ['errorCode', 'CODE'],
        ['committedAt', 'AT'],
      ]),
      '',
      'Re-drives:',
      table(story.redrives ?? [], [
        ['redriveId', 'REDRIVE'],
        ['principal', 'BY'],
        ['mode', 'MODE'],
        ['reason', 'REASON'],
        ['jobId', 'JOB'],
        ['at', 'AT'],
      ]),
      '',
      'DLQ envelopes:',
      table(story.dlq ?? [], [
        ['transitionKey', 'TRANSITION'],
        ['terminalReason', 'REASON'],
        ['errorCode', 'CODE'],
        ['groupId', 'GROUP'],
        ['at', 'AT'],
      ]),
      '',
      'Command effects:',
      table(effects.items, [
        ['stepIndex', 'STEP'],
        ['stepName', 'NAME'],
        ['status', 'STATUS'],
        ['errorCode', 'CODE'],
      ]),
    ];
    return lines.filter((line, i) => line !== '' || lines[i - 1] !== '').join('\n');
  });
}

/** The evidence's own members: those the remote call line already shows (same key, same value) left out. */
export function withoutShown(evidence: Record<string, unknown>, shown: Record<string, unknown> | null | undefined): Record<string, unknown> {
  return Object.fromEntries(Object.entries(evidence).filter(([key, value]) => !shown || shown[key] !== value));
}

/** An object as indented `key: value` lines (nested objects one level further in). */
export function fields(value: Record<string, unknown>, indent: string): string[] {
  return Object.entries(value).flatMap(([key, v]) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? [`${indent}${key}:`, ...fields(v as Record<string, unknown>, `${indent}  `)]
      : [`${indent}${key}: ${Array.isArray(v) ? v.join(', ') : v === null ? '-' : String(v)}`],
  );
}

/**
 * Each run with how it ended: the last run ends as the record stands (RUNNING while it runs);
 * an earlier one as its last committed attempt before the next run was asked for (FAILED,
 * REMOTE_OUTCOME_UNKNOWN…), else "superseded" (a run lost and re-driven). START is the
 * dispatch's own state (STARTED once Temporal took the start), not the run's outcome.
 */
export function runsWithOutcome(
  record: Pick<Answer<typeof ExecutionRecordView>, 'status'>,
  story: { runs?: Record<string, unknown>[]; attempts?: { committedAt: string; outcome: string }[] },
): Record<string, unknown>[] {
  const runs = story.runs ?? [];
  const attempts = story.attempts ?? [];
  return runs.map((run, i) => {
    const next = runs[i + 1];
    if (!next) return { ...run, outcome: record.status };
    const within = attempts.filter((a) => a.committedAt >= String(run.requestedAt) && a.committedAt < String(next.requestedAt));
    const last = within.at(-1);
    const outcome = last && last.outcome !== 'SUCCEEDED' && last.outcome !== 'RETRY_SCHEDULED' ? last.outcome : 'superseded';
    return { ...run, outcome };
  });
}

/** `skippedByCode` in words: "2 EXECUTION_SUCCEEDED, 1 …", or "none". */
export const skippedLine = (byCode: Record<string, number> | undefined) =>
  Object.entries(byCode ?? {})
    .map(([code, n]) => `${n} ${code}`)
    .join(', ') || 'none';

export function jobLine(job: JobView): string {
  const c = job.counts;
  const rate = job.rate.achieved === null ? `${job.rate.asked}/s asked` : `${job.rate.achieved}/s of ${job.rate.asked}/s`;
  return `${job.jobId}  ${job.status}${job.haltReason ? ` (halted: ${job.haltReason})` : ''}${job.failureReason ? ` (failed: ${job.failureReason})` : ''}  ${c.processed}/${c.selected} processed: ${c.admitted} admitted, ${c.skipped} skipped, ${c.succeeded} succeeded, ${c.failedAgain} failed again, ${c.running} running  ${rate}${job.etaSeconds ? `  ETA ${job.etaSeconds} s` : ''}${job.heldBack ? `  (${job.heldBack})` : ''}`;
}

export async function jobsList(client: AdminClient, io: Io, options: { limit?: string; cursor?: string }): Promise<void> {
  const page = await client.call('GET /admin/tenants/{tenantId}/redrive-jobs', {
    params: { tenantId: client.tenant },
    query: { limit: options.limit, cursor: options.cursor },
  });
  emit(
    io,
    page,
    () =>
      table(
        page.items.map((job) => ({ ...job, progress: `${job.counts.processed}/${job.counts.selected}`, failedAgain: job.counts.failedAgain })),
        [
          ['jobId', 'JOB'],
          ['status', 'STATUS'],
          ['progress', 'PROCESSED'],
          ['failedAgain', 'FAILED AGAIN'],
          ['principal', 'BY'],
          ['reason', 'REASON'],
          ['createdAt', 'CREATED'],
        ],
      ) + more(page.nextCursor),
  );
}

export async function jobShow(client: AdminClient, io: Io, jobId: string): Promise<void> {
  const job = await client.call('GET /admin/tenants/{tenantId}/redrive-jobs/{jobId}', { params: { tenantId: client.tenant, jobId } });
  emit(io, job, () =>
    [
      jobLine(job),
      `by ${job.principal}: ${job.reason}`,
      `skipped by code: ${skippedLine(job.counts.skippedByCode)}`,
      `Temporal workflow: ${job.workflowId}`,
    ].join('\n'),
  );
}

/** What each class means, in the words the runbook uses. */
const CLASS_WORDS: Record<string, string> = {
  systemic_execution_failure: 'DLQ growth: executions are failing',
  admission_pressure: 'checkpoint backlog growth: admission pressure, nothing executed yet',
  data_quality_drift: 'item rejects rising while executions succeed: data-quality drift',
  healthy: 'no signal moved',
};

/** The command to run next for a finding (what the first action asks to look at). */
/** A triage finding as the CLI reads it. */
type Finding = { classification: string; detail?: Record<string, unknown> };

export function triageNext(finding: Finding, tenant: string | undefined, url = 'http://127.0.0.1:8080/pipeline'): string | undefined {
  // A word, not `<tenant>` (bash reads that as a redirection): replace it with each tenant in turn.
  const t = tenant ? '' : ' --tenant TENANT';
  const detail = finding.detail ?? {};
  switch (finding.classification) {
    case 'systemic_execution_failure': {
      const filters = [
        detail.dominantErrorCode ? `--error-code ${detail.dominantErrorCode}` : '',
        detail.dominantTerminalReason ? `--terminal-reason ${detail.dominantTerminalReason}` : '',
      ].filter(Boolean);
      return `${cli({ tenant: Boolean(tenant) })} dlq groups${t}${filters.length ? ` ${filters.join(' ')}` : ''}   (the failure groups, each with the re-drive command that fits it)`;
    }
    case 'admission_pressure':
      // Readiness is served at the root, not under the API's prefix.
      return `curl -s ${shellWord(new URL('/readyz', url).href)}   (is Temporal reachable?), then docs/runbook.md, "Triage"`;
    case 'data_quality_drift': {
      const token = tokenWord();
      return `curl -s ${shellWord(`${url}/admin/tenants/${tenant ?? 'TENANT'}/rejects`)} -H "Authorization: Bearer ${token}"   (the rejected items and their fingerprints${token === '$TOKEN' ? '; TOKEN: your admin token' : ''})`;
    }
    default:
      return undefined;
  }
}

/** A finding's detail in words. */
function detailWords(finding: Finding): string | undefined {
  const d = finding.detail ?? {};
  if (finding.classification === 'systemic_execution_failure')
    return `mostly ${d.dominantErrorCode ?? '?'} / ${d.dominantTerminalReason ?? '?'} (${d.envelopes} envelopes in the window)`;
  if (finding.classification === 'admission_pressure') return `${d.backlog} checkpoints waiting`;
  if (finding.classification === 'data_quality_drift')
    return `top fingerprint ${d.topFingerprint ?? '-'} (${Math.round(Number(d.topFingerprintShare ?? 0) * 100)}% of rejects)`;
  return undefined;
}

export async function triage(client: AdminClient, io: Io, options: { window?: string; allTenants?: boolean }): Promise<void> {
  const query = { window: options.window };
  // Across tenants: an admin token without a tenant allow-list (403 otherwise).
  const report = options.allTenants
    ? await client.call('GET /admin/triage', { query })
    : await client.call('GET /admin/tenants/{tenantId}/triage', { params: { tenantId: client.tenant }, query });
  emit(io, report, () => {
    const minutes = Math.round((report.windowSeconds ?? 0) / 60);
    const tenant = options.allTenants ? undefined : client.settings.tenant;
    const classification = report.classification ?? 'healthy';
    const signal = (name: string, s: OkBody<'GET /admin/triage'>['signals']['executionDlq'] | undefined) =>
      s ? `${name} ${s.current} (${s.previous} before, ${s.trend})` : undefined;
    const signals = report.signals ?? {};
    const lines = [
      `${tenant ?? 'all tenants'}: ${classification} (${CLASS_WORDS[classification] ?? classification}), last ${minutes} min against the ${minutes} before`,
      `  ${[
        signal('DLQ envelopes', signals.executionDlq),
        signal('item rejects', signals.itemRejects),
        signal('succeeded', signals.executionsSucceeded),
        signal('checkpoint backlog', signals.checkpointBacklog),
      ]
        .filter(Boolean)
        .join(' · ')}`,
    ];
    const findings = report.findings;
    findings.forEach((finding, i) => {
      if (i > 0) lines.push(`also: ${finding.classification} (${CLASS_WORDS[finding.classification] ?? finding.classification})`);
      const words = detailWords(finding);
      if (words) lines.push(`  ${words}`);
      lines.push(`  first action: ${finding.firstAction}`);
      const next = triageNext(finding, tenant, client.settings.url);
      if (next) lines.push(`  next: ${next}`);
    });
    return lines.join('\n');
  });
}

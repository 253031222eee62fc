/**
 * The read commands: the DLQ and its failure groups, an execution (record, effects, story),
 * bulk re-drive jobs, triage. Each prints the API's JSON with --json.
 */
import type { AdminClient } from '../client';
import { emit, table, type Io } from '../io';

/** The query string of the given options that are set (`?a=1&b=2`, or ''). */
function queryOf(params: Record<string, string | undefined>): string {
  const query = new URLSearchParams(Object.entries(params).filter((entry): entry is [string, string] => entry[1] !== undefined && entry[1] !== ''));
  return query.size ? `?${query}` : '';
}

/** Human output's last line for a page with more: the flag that reads the next one. */
const more = (nextCursor: string | null) => (nextCursor ? `\n(more: add --cursor ${nextCursor})` : '');

export async function dlqList(
  client: AdminClient,
  io: Io,
  options: { terminalReason?: string; errorCode?: string; limit?: string; cursor?: string },
): Promise<void> {
  const query = queryOf({ terminalReason: options.terminalReason, errorCode: options.errorCode, limit: options.limit, cursor: options.cursor });
  const page = await client.request('GET', client.tenantPath(`/dlq${query}`));
  emit(
    io,
    page,
    () =>
      table(
        page.items.map((item: any) => ({
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
  const query = queryOf({ terminalReason: options.terminalReason, errorCode: options.errorCode, limit: options.limit });
  const groups = await client.request('GET', client.tenantPath(`/dlq/groups${query}`));
  emit(
    io,
    groups,
    () =>
      table(
        groups.items.map((g: any) => ({
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
      ) + (groups.items.length ? '\n\nRe-drive a group: pipeline-admin redrive-batch --group <GROUP> --reason "…" --allow-failed' : ''),
  );
}

export async function executionShow(client: AdminClient, io: Io, executionId: string): Promise<void> {
  const path = client.tenantPath(`/executions/${encodeURIComponent(executionId)}`);
  const record = await client.request('GET', path);
  const [effects, story] = await Promise.all([client.request('GET', `${path}/effects`), client.request('GET', `${path}/history`)]);
  emit(io, { record, effects: effects.items, history: story }, () => {
    const lines = [
      `${record.executionId}  ${record.status}  version ${record.version}  pipeline ${record.pipeline} v${record.pipelineVersion}  step ${record.currentStepIndex} attempt ${record.attempt}`,
      record.terminalReason ? `failed: ${record.terminalReason} ${record.lastErrorCode ?? ''} at step ${record.failedStepIndex}` : '',
      record.remoteCall
        ? `remote call: ${record.remoteCall.transitionKey} ${record.remoteCall.protocol} ${record.remoteCall.target} (elapsed ${record.remoteCall.elapsedMs} ms of ${record.remoteCall.deadlineMs})`
        : '',
      record.disposition ? `disposition evidence: ${JSON.stringify(record.disposition)}` : '',
      '',
      'Runs:',
      table(story.runs ?? [], [
        ['runId', 'RUN'],
        ['dispatch', 'DISPATCH'],
        ['status', 'STATUS'],
        ['requestedAt', 'REQUESTED'],
      ]),
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

export function jobLine(job: any): string {
  const c = job.counts;
  const rate = job.rate.achieved === null ? `${job.rate.asked}/s asked` : `${job.rate.achieved}/s of ${job.rate.asked}/s`;
  return `${job.jobId}  ${job.status}${job.haltReason ? ` (halted: ${job.haltReason})` : ''}${job.failureReason ? ` (failed: ${job.failureReason})` : ''}  ${c.processed}/${c.selected} processed: ${c.admitted} admitted, ${c.skipped} skipped, ${c.succeeded} succeeded, ${c.failedAgain} failed again, ${c.running} running  ${rate}${job.etaSeconds ? `  ETA ${job.etaSeconds} s` : ''}${job.heldBack ? `  (${job.heldBack})` : ''}`;
}

export async function jobsList(client: AdminClient, io: Io, options: { limit?: string; cursor?: string }): Promise<void> {
  const page = await client.request('GET', client.tenantPath(`/redrive-jobs${queryOf({ limit: options.limit, cursor: options.cursor })}`));
  emit(
    io,
    page,
    () =>
      table(
        page.items.map((job: any) => ({ ...job, progress: `${job.counts.processed}/${job.counts.selected}`, failedAgain: job.counts.failedAgain })),
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
  const job = await client.request('GET', client.tenantPath(`/redrive-jobs/${encodeURIComponent(jobId)}`));
  emit(io, job, () =>
    [
      jobLine(job),
      `by ${job.principal}: ${job.reason}`,
      `skipped by code: ${JSON.stringify(job.counts.skippedByCode)}`,
      `Temporal workflow: ${job.workflowId}`,
    ].join('\n'),
  );
}

export async function triage(client: AdminClient, io: Io, options: { window?: string; allTenants?: boolean }): Promise<void> {
  const query = queryOf({ window: options.window });
  // Across tenants: an admin token without a tenant allow-list (403 otherwise).
  const report = await client.request('GET', options.allTenants ? `/admin/triage${query}` : client.tenantPath(`/triage${query}`));
  emit(io, report, () => {
    const findings = (report.findings ?? []).map((f: any) => `  ${f.classification}: ${f.firstAction}${f.detail ? `  ${JSON.stringify(f.detail)}` : ''}`);
    const minutes = Math.round((report.windowSeconds ?? 0) / 60);
    return [
      `${options.allTenants ? 'all tenants' : client.settings.tenant}: ${report.classification ?? 'no signal'}${report.firstAction ? `: ${report.firstAction}` : ''} (last ${minutes} min against the ${minutes} before)`,
      ...findings,
    ].join('\n');
  });
}

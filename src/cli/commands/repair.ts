/**
 * Repair from the command line: `fork` (dry run, the Command steps it runs again, asks, starts)
 * and `executions fixture` (a failed execution as a test fixture file for fromFixture).
 */
import { writeFileSync } from 'node:fs';
import type { AdminClient } from '../client';
import { CliError } from '../exit-codes';
import { confirm, emit, note, type Io } from '../io';
import { correctionFlags, correctionLines } from './redrive';

export async function forkOne(
  client: AdminClient,
  io: Io,
  executionId: string,
  options: { newId: string; fromStep?: string; reason: string; patch?: string; input?: string; dryRun?: boolean; yes?: boolean },
): Promise<void> {
  const params = { tenantId: client.tenant, executionId };
  const fork = 'POST /admin/tenants/{tenantId}/executions/{executionId}/fork';
  const fromStep = options.fromStep === undefined ? undefined : Number(options.fromStep);
  if (fromStep !== undefined && !(Number.isInteger(fromStep) && fromStep >= 0))
    throw new CliError(`--from-step ${options.fromStep} must be a step index ≥ 0`, 'USAGE');
  const body = { newExecutionId: options.newId, reason: options.reason, ...(fromStep !== undefined ? { fromStep } : {}), ...correctionFlags(options) };
  const plan = await client.call(fork, { params, query: { dryRun: 'true' }, body }, { expect: 200 });
  if (!plan.admitted) {
    if (io.json) emit(io, { dryRun: plan }, () => '');
    throw new CliError(`the fork of ${executionId} would be refused: ${plan.status} ${plan.code}: ${plan.detail}`, 'REFUSED', plan.code);
  }
  note(
    io,
    `${plan.executionId} would start at step ${plan.forkedFrom.stepIndex} of ${plan.pipeline} v${plan.pipelineVersion} (input from ${plan.inputSource}), forked from ${executionId} at version ${plan.forkedFrom.version}.`,
  );
  note(
    io,
    plan.commandSteps.length
      ? `Command steps it runs again under new keys: ${plan.commandSteps.map((s) => `${s.step} (${s.transitionKey})`).join(', ')}`
      : 'no Command step runs again',
  );
  if (plan.correction) note(io, correctionLines(plan.correction));
  if (options.dryRun) {
    emit(io, { dryRun: plan }, () => `${executionId}: would be forked as ${plan.executionId} (dry run: nothing changed)`);
    return;
  }
  if (!options.yes && !(await confirm(io, `Fork ${executionId} as ${plan.executionId}?`))) throw new CliError('not forked: you said no', 'DECLINED');
  const accepted = await client.call(fork, { params, body }, { expect: 202 });
  emit(
    io,
    { dryRun: plan, accepted },
    () => `${accepted.executionId}: QUEUED at step ${accepted.startStepIndex} (run ${accepted.runId ?? 'pending: the sweeper starts it'})`,
  );
}

export async function executionFixture(client: AdminClient, io: Io, executionId: string, options: { out?: string }): Promise<void> {
  const fixture = await client.call('GET /admin/tenants/{tenantId}/executions/{executionId}/fixture', { params: { tenantId: client.tenant, executionId } });
  const file = options.out ?? `${executionId}.fixture.json`;
  writeFileSync(file, `${JSON.stringify(fixture, null, 2)}\n`, { mode: 0o600 });
  emit(
    io,
    { file, pipeline: fixture.pipeline, pipelineVersion: fixture.pipelineVersion, failedStep: fixture.failedStep },
    () =>
      `${file}: ${fixture.pipeline} v${fixture.pipelineVersion}, failed at step ${fixture.failedStep.index} (${fixture.failedStep.name ?? '?'}); run it: runPipeline(pipeline, fromFixture('${file}'))`,
  );
}

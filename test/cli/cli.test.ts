/**
 * The operator CLI, driven as a child process against the real service on a loopback port
 * (dev server, Postgres): the confirmation prompt answered yes and no, --json, a bulk job
 * followed to its end, Ctrl-C holding a job (a pause before the question), exit codes for bad flags, a wrong token and a
 * service that is not there.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { leasePort } from '../../src/port-allocator';
import { definePipeline, localStep } from '../../src/pipeline/define';
import { AS_STARTED, CLI, type Run, runCli, type RunOptions } from '../helpers/cli-runner';
import { ADMIN_TOKEN, startTestEngine, type TestEngine } from '../helpers/engine';
import { scaled } from '../helpers/time-scale';
import { until } from '../helpers/until';

let engine: TestEngine;
let url: string;
const healthy = new Set<string>();
const calls = new Map<string, number>();

const pipelines = [
  definePipeline({
    name: 'ledger',
    steps: [
      localStep(
        'book',
        (input: unknown, ctx) => {
          calls.set(ctx.executionId, (calls.get(ctx.executionId) ?? 0) + 1);
          if (healthy.has(ctx.executionId)) return input;
          throw Object.assign(new Error('ledger down'), { code: 'LEDGER_DOWN' });
        },
        { retry: { limit: 0 } },
      ),
    ],
  }),
  // A Command step, so `dlq groups` has a group whose re-drive needs the intent.
  definePipeline({
    name: 'payments',
    steps: [
      localStep(
        'pay',
        (input: unknown, ctx) => {
          calls.set(ctx.executionId, (calls.get(ctx.executionId) ?? 0) + 1);
          throw Object.assign(new Error('card network down'), { code: 'PAY_DOWN' });
        },
        { command: true, retry: { limit: 0 } },
      ),
    ],
  }),
];

/** Runs the CLI with its settings from the environment (`env` overrides them); `onStderr` answers or interrupts it. */
const cli = (args: string[], options: RunOptions & { env?: Record<string, string> } = {}): Promise<Run> =>
  runCli(args, { ...process.env, PIPELINE_URL: url, PIPELINE_TOKEN: ADMIN_TOKEN, PIPELINE_TENANT: 'acme', PIPELINE_ADMIN_CONFIG: '', ...options.env }, options);

const record = (id: string) => engine.service.store.get('acme', id);

const TTY_IDS = Array.from({ length: 6 }, (_, i) => `tty-${i}`);
const NPX_IDS = Array.from({ length: 4 }, (_, i) => `npx-${i}`);

/**
 * Runs the CLI in a pseudo-terminal (util-linux `script`): stdin and stderr are a TTY, so the
 * progress bar draws and Ctrl-C is the terminal's. `onOutput` sees the terminal's output as it
 * comes and may type into it.
 */
function terminal(
  args: string[],
  onOutput: (text: string, type: (keys: string) => void) => void,
  command: string[] = CLI,
): Promise<{ code: number | null; out: string }> {
  const quoted = [...command, ...args].map((arg) => `'${arg.replace(/'/g, `'\\''`)}'`).join(' ');
  const child = spawn('script', ['-qfec', `exec ${quoted}`, '/dev/null'], {
    env: { ...process.env, PIPELINE_URL: url, PIPELINE_TOKEN: ADMIN_TOKEN, PIPELINE_TENANT: 'acme', PIPELINE_ADMIN_CONFIG: '' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  const type = (keys: string) => child.stdin!.write(keys);
  child.stdout!.on('data', (chunk) => {
    out += chunk;
    onOutput(out, type);
  });
  child.stderr!.on('data', (chunk) => (out += chunk));
  return new Promise((resolve) =>
    child.on('close', (code) => {
      child.stdin!.destroy();
      resolve({ code, out });
    }),
  );
}

beforeAll(async () => {
  engine = await startTestEngine(pipelines, { 'pipeline.server.port': 0 }, { http: true });
  url = `http://127.0.0.1:${engine.service.ports.http}/pipeline`;
  const ids = ['one', 'two', 'dry', ...Array.from({ length: 12 }, (_, i) => `fleet-${i}`), ...['halt-0', 'halt-1', 'halt-2'], ...TTY_IDS, ...NPX_IDS];
  for (const id of ids) await engine.start('acme', { pipeline: 'ledger', executionId: id, input: {} });
  for (const id of ids) await engine.waitFor('acme', id, ['FAILED']);
  for (const id of ['pay-0', 'pay-1']) await engine.start('acme', { pipeline: 'payments', executionId: id, input: {} });
  for (const id of ['pay-0', 'pay-1']) await engine.waitFor('acme', id, ['FAILED']);
});
afterAll(async () => engine?.stop());

describe('pipeline-admin', { timeout: scaled(300_000) }, () => {
  it('redrive: answering no at the prompt changes nothing and exits 130', async () => {
    const before = await record('one');
    const run = await cli(['redrive', 'one', '--reason', 'ledger back', '--allow-failed'], { input: 'n\n' });
    expect(run.code).toBe(130);
    expect(run.stderr).toContain('resumes at step 0 as attempt 2 (mode FAILED');
    expect(run.stderr).toContain('Re-drive one? [y/N]');
    expect((await record('one'))!.version).toBe(before!.version);
    expect(calls.get('one')).toBe(1);
  });

  it('redrive --patch: shows the diff (paths and fingerprints, no values) and asks; yes re-drives with the corrected input', async () => {
    await engine.start('acme', { pipeline: 'ledger', executionId: 'patch-1', input: { account: 'a-1' } });
    await engine.waitFor('acme', 'patch-1', ['FAILED']);
    healthy.add('patch-1');
    const dir = mkdtempSync(join(tmpdir(), 'cli-patch-'));
    writeFileSync(join(dir, 'patch.json'), JSON.stringify({ account: 'a-2', memo: null }));
    const run = await cli(['redrive', 'patch-1', '--reason', 'account was mistyped', '--allow-failed', '--patch', join(dir, 'patch.json')], { input: 'y\n' });
    expect(run.stderr).toMatch(/corrected input \(patch\): changes \/account; fingerprint sha256:[0-9a-f]{16} → sha256:[0-9a-f]{16}/);
    expect(run.stderr).toContain('values shown only to a token with readPayloads');
    expect(run.stderr).not.toContain('a-2');
    expect(run.code).toBe(0);
    expect((await record('patch-1'))!.segmentInput).toEqual({ account: 'a-2' });
    const bad = await cli(['redrive', 'patch-1', '--reason', 'r', '--allow-failed', '--patch', join(dir, 'missing.json')]);
    expect(bad.stderr).toContain('--patch');
    expect(bad.code).toBe(2);
  });

  it('fork --dry-run names the Command steps it runs again under new keys; executions fixture refuses a token without readPayloads', async () => {
    const plan = await cli(['fork', 'pay-1', '--new-id', 'pay-1-fork', '--reason', 'try on a fresh id', '--dry-run']);
    expect(plan.stderr).toContain('Command steps it runs again under new keys: pay (pay-1-fork:0:1)');
    expect(plan.code).toBe(0);
    expect(await record('pay-1-fork')).toBeNull();
    const fixture = await cli(['executions', 'fixture', 'pay-1', '--out', join(mkdtempSync(join(tmpdir(), 'cli-fixture-')), 'f.json')]);
    expect(fixture.stderr).toContain('readPayloads');
    expect(fixture.code).not.toBe(0);
  });

  it('redrive: yes at the prompt re-drives, follows the run to its end, exits 0', async () => {
    healthy.add('one');
    const run = await cli(['redrive', 'one', '--reason', 'ledger back', '--allow-failed'], { input: 'y\n' });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^one: SUCCEEDED at version \d+ \(redriveId /);
    expect((await record('one'))!.status).toBe('SUCCEEDED');
    expect(calls.get('one')).toBe(2);
  });

  it('redrive --yes --json: only JSON on stdout; a run that fails again exits 6', async () => {
    const run = await cli(['redrive', 'two', '--reason', 'try again', '--allow-failed', '--yes', '--json']);
    expect(run.code).toBe(6);
    const out = JSON.parse(run.stdout);
    expect(out).toMatchObject({
      dryRun: { admitted: true, attempt: 2 },
      accepted: { status: 'QUEUED', executionId: 'two' },
      final: { status: 'FAILED', version: expect.any(Number) },
    });
    expect(run.stderr).toContain(`pipeline-admin: the re-driven run did not succeed; see why: ${AS_STARTED} executions show two`);
    // Human output: how it ended is said once (stdout), the error line says only what to do next.
    const human = await cli(['redrive', 'two', '--reason', 'once more', '--allow-failed', '--yes']);
    expect(human.code).toBe(6);
    expect(human.stdout).toMatch(/^two: FAILED \(LEDGER_DOWN\) at version \d+ \(redriveId [0-9a-f-]{36}\)\n$/);
    expect(human.stderr).not.toContain('ended FAILED');
    expect(human.stderr.split('\n').filter((line) => line.startsWith('pipeline-admin:'))).toEqual([
      `pipeline-admin: the re-driven run did not succeed; see why: ${AS_STARTED} executions show two`,
    ]);
  });

  it('--override-evidence reaches the API as overrideEvidence (refused without --confirmed-disposition: exit 2, the reason named)', async () => {
    const run = await cli(['redrive', 'dry', '--reason', 'proof in INC-1', '--allow-failed', '--override-evidence', '--dry-run']);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain('overrideEvidence applies only with confirmedDisposition NOT_APPLIED');
    expect((await cli(['redrive', '--help'])).stdout).toContain('--override-evidence');
  });

  it('dlq groups: the re-drive command fits each group (the intent for a Command step only); a refused batch names the flag', async () => {
    const groups = JSON.parse((await cli(['dlq', 'groups', '--json'])).stdout).items;
    const pay = groups.find((g: any) => g.signature.errorCode === 'PAY_DOWN');
    const ledger = groups.find((g: any) => g.signature.errorCode === 'LEDGER_DOWN');
    const human = await cli(['dlq', 'groups']);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toContain(
      `  ${pay.groupId}  ${AS_STARTED} redrive-batch --group ${pay.groupId} --reason "…" --allow-failed --intent RETRY_FAILED_COMMAND\n    pay is a Command step`,
    );
    expect(human.stdout).toContain(
      `  ${ledger.groupId}  ${AS_STARTED} redrive-batch --group ${ledger.groupId} --reason "…" --allow-failed\n    book is not a Command step`,
    );
    // The command it suggests for the Command group would re-drive every item; without the intent, none, and it says what to add.
    const fits = await cli([
      'redrive-batch',
      '--group',
      pay.groupId,
      '--reason',
      'r',
      '--allow-failed',
      '--intent',
      'RETRY_FAILED_COMMAND',
      '--dry-run',
      '--json',
    ]);
    expect(JSON.parse(fits.stdout)).toMatchObject({ matched: 2, wouldAdmit: 2 });
    const without = await cli(['redrive-batch', '--group', pay.groupId, '--reason', 'r', '--allow-failed', '--dry-run']);
    expect(without.code).toBe(3);
    expect(without.stderr).toContain('(add --intent RETRY_FAILED_COMMAND to retry the failed Command step on purpose)');
    const single = await cli(['redrive', 'pay-0', '--reason', 'r', '--allow-failed', '--dry-run']);
    expect(single.code).toBe(3);
    expect(single.stderr).toContain('retrying it needs --intent RETRY_FAILED_COMMAND (add --intent RETRY_FAILED_COMMAND');
    expect(calls.get('pay-0')).toBe(1);
  });

  it("dlq groups and executions show --json print the API's JSON", async () => {
    const groups = await cli(['dlq', 'groups', '--error-code', 'LEDGER_DOWN', '--json']);
    expect(groups.code).toBe(0);
    const parsed = JSON.parse(groups.stdout);
    expect(parsed.items).toHaveLength(1);
    expect(parsed.items[0]).toMatchObject({ signature: { errorCode: 'LEDGER_DOWN', step: 'book' } });
    const shown = await cli(['executions', 'show', 'one', '--json']);
    expect(shown.code).toBe(0);
    const story = JSON.parse(shown.stdout);
    expect(story.record).toMatchObject({ executionId: 'one', status: 'SUCCEEDED' });
    expect(story.history.redrives).toEqual([expect.objectContaining({ principal: 'test-admin', reason: 'ledger back' })]);
    const human = await cli(['executions', 'show', 'one']);
    expect(human.stdout).toContain('one:0:2');
    expect(human.stdout).toMatch(/DLQ envelopes:\nTRANSITION +REASON +CODE +GROUP +AT\none:0:1 +retry_exhausted +LEDGER_DOWN +[0-9a-f]{16} /);
    // Each run says how it ended (the dispatch's STARTED is only that Temporal took the start).
    expect(human.stdout).toMatch(/Runs:\nRUN +KIND +START +REQUESTED +ENDED\n\S+ +start +STARTED +\S+ +FAILED\n\S+ +redrive +STARTED +\S+ +SUCCEEDED\n/);
  });

  it('executions show says a start that is not reaching Temporal, and why', async () => {
    // A run nobody here dispatched holds the workflow id, on a queue no worker polls (an id of its
    // own: the dev server is shared by every file of the run).
    const id = `held-${randomBytes(4).toString('hex')}`;
    const foreign = await engine.service.client.workflow.start('pipelineWorkflow', { workflowId: `pipeline/acme/${id}`, taskQueue: `nobody-${id}`, args: [] });
    try {
      expect(await engine.start('acme', { pipeline: 'ledger', executionId: id, input: {} })).toMatchObject({ dispatch: 'pending' });
      const startAttempts = async () =>
        ((await (await engine.request('GET', `/admin/tenants/acme/executions/${id}`)).json()) as any).pendingStart?.startAttempts ?? 0;
      await until(async () => (await startAttempts()) >= 2, 30_000, 'the sweeper to try the start again');
      const human = await cli(['executions', 'show', id]);
      expect(human.code, human.stderr).toBe(0);
      expect(human.stdout).toMatch(
        /^start not seen yet: start requested \S+, \d+ start attempts; last error: Error: workflow pipeline\/acme\/held-[0-9a-f]{8} is still running, a run this orchestrator did not start/m,
      );
      expect(calls.get(id)).toBeUndefined();
    } finally {
      // Then the execution runs, once, and succeeds: nothing of it in the DLQ the other tests count.
      healthy.add(id);
      await foreign.terminate('the test is done with it');
    }
    await engine.waitFor('acme', id, ['SUCCEEDED'], 60_000);
    expect(calls.get(id)).toBe(1);
  });

  it('--dry-run prints the plan and changes nothing: 0 when it would run, 3 with the code when refused', async () => {
    const before = await record('dry');
    const one = await cli(['redrive', 'dry', '--reason', 'look first', '--allow-failed', '--dry-run', '--json']);
    expect(one.code, one.stderr).toBe(0);
    expect(JSON.parse(one.stdout)).toEqual({ dryRun: expect.objectContaining({ admitted: true, executionId: 'dry', attempt: 2, mode: 'FAILED' }) });
    const refused = await cli(['redrive', 'dry', '--reason', 'look first', '--dry-run', '--json']);
    expect(refused.code).toBe(3);
    expect(JSON.parse(refused.stdout)).toMatchObject({ dryRun: { admitted: false, code: 'ALLOW_FAILED_REQUIRED' } });
    expect(refused.stderr).toContain('would be refused: 409 ALLOW_FAILED_REQUIRED');

    const batch = await cli(['redrive-batch', '--ids', 'dry', '--reason', 'look first', '--allow-failed', '--rate', '4', '--dry-run', '--json']);
    expect(batch.code, batch.stderr).toBe(0);
    expect(JSON.parse(batch.stdout)).toMatchObject({
      dryRun: true,
      matched: 1,
      wouldAdmit: 1,
      refused: {},
      ratePerSecond: 4,
      sample: [{ executionId: 'dry', admitted: true }],
    });
    const human = await cli(['redrive-batch', '--ids', 'dry', '--reason', 'look first', '--dry-run']);
    expect(human.code).toBe(3);
    expect(human.stdout).toMatch(/dry\s+\d+\s+ALLOW_FAILED_REQUIRED: /);
    expect(human.stderr).toContain('1 executions match; 0 would be re-driven, refused: 1 ALLOW_FAILED_REQUIRED');

    // A failure group from `dlq groups`, as the 3 a.m. walkthrough takes it.
    const [group] = JSON.parse((await cli(['dlq', 'groups', '--error-code', 'LEDGER_DOWN', '--json'])).stdout).items;
    const byGroup = await cli(['redrive-batch', '--group', group.groupId, '--reason', 'look first', '--allow-failed', '--dry-run', '--json']);
    expect(byGroup.code, byGroup.stderr).toBe(0);
    expect(JSON.parse(byGroup.stdout)).toMatchObject({ dryRun: true, matched: group.count, wouldAdmit: group.count });

    expect((await record('dry'))!.version).toBe(before!.version);
    expect(calls.get('dry')).toBe(1);
    expect(JSON.parse((await cli(['jobs', '--json'])).stdout).items).toEqual([]);
  });

  it('redrive-batch: dry run, confirmation, then follows the job to COMPLETED', async () => {
    for (let i = 0; i < 6; i++) healthy.add(`fleet-${i}`);
    const ids = Array.from({ length: 6 }, (_, i) => `fleet-${i}`).join(',');
    const run = await cli(['redrive-batch', '--ids', ids, '--reason', 'ledger back', '--allow-failed', '--rate', '20', '--json'], { input: 'y\n' });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain('6 executions match; 6 would be re-driven, refused: none');
    // The dry run of up to 10,000 executions waits ten times the per-call timeout, and says so.
    expect(run.stderr).toContain('judging the selection (dry run; waits up to 300 s)');
    const job = JSON.parse(run.stdout);
    expect(job).toMatchObject({ status: 'COMPLETED', counts: { selected: 6, admitted: 6, succeeded: 6, running: 0 } });
    for (let i = 0; i < 6; i++) expect(calls.get(`fleet-${i}`)).toBe(2);
    const shown = await cli(['jobs', 'show', job.jobId]);
    expect(shown.stdout).toContain('\nskipped by code: none\n');
    // Following a job that is already over: said once, by the result line (no progress line on stderr too).
    const followed = await cli(['jobs', 'show', job.jobId, '--follow']);
    expect(followed.code, followed.stderr).toBe(0);
    expect(followed.stdout).toMatch(new RegExp(`^${job.jobId} {2}COMPLETED {2}6/6 processed`));
    expect(followed.stderr).not.toContain('COMPLETED');
  });

  it('redrive-batch: Ctrl-C while following holds the job at once, then asks; "a" aborts it', async () => {
    const ids = Array.from({ length: 6 }, (_, i) => `fleet-${6 + i}`).join(',');
    let interrupted = false;
    let answered = false;
    let whileAsked: any;
    let jobId = '';
    const run = await cli(['redrive-batch', '--ids', ids, '--reason', 'slowly', '--allow-failed', '--rate', '0.2', '--yes'], {
      onStderr: (text, child) => {
        // Once the job is being followed, interrupt; once asked, look at the job before answering.
        if (!interrupted && /processed: \d+ admitted/.test(text)) {
          interrupted = true;
          child.kill('SIGINT');
        }
        if (!answered && text.includes('Resume, stay paused, or abort? [r/P/a]')) {
          answered = true;
          jobId = /job ([0-9a-f-]{36}) started/.exec(text)![1];
          void cli(['jobs', 'show', jobId, '--json']).then((shown) => {
            whileAsked = JSON.parse(shown.stdout);
            child.stdin!.end('a\n');
          });
        }
      },
    });
    expect(run.code, run.stderr).toBe(130);
    // Held before the question: the job was PAUSED while the operator read it, by the CLI's pause.
    expect(whileAsked).toMatchObject({ status: 'PAUSED', haltReason: null });
    expect(whileAsked.controlLog.at(-1)).toMatchObject({ action: 'pause', principal: 'test-admin', reason: 'held from pipeline-admin (Ctrl-C)' });
    const held = new RegExp(`job ${jobId} held \\(PAUSED\\) at (\\d)/6 processed`).exec(run.stderr);
    expect(held, run.stderr).not.toBeNull();
    // The counts printed are those it stopped at: while the question waited, at most an admission
    // already under way when the pause was written landed (the service stops within one item).
    expect(whileAsked.counts.processed - Number(held![1])).toBeLessThanOrEqual(1);
    expect(run.stderr).toContain(`job ${jobId} ABORTED at ${whileAsked.counts.processed}/6 processed`);
    const shown = JSON.parse((await cli(['jobs', 'show', jobId, '--json'])).stdout);
    expect(shown).toMatchObject({ status: 'ABORTED', counts: { processed: whileAsked.counts.processed } });
    expect(shown.controlLog.map((e: any) => e.action)).toEqual(['pause', 'abort']);
    const again = await cli(['jobs', 'pause', jobId]);
    expect(again.code).toBe(3);
    expect(again.stderr).toContain('JOB_FINISHED');
    const listed = await cli(['jobs', '--json']);
    expect(JSON.parse(listed.stdout).items.map((j: any) => j.jobId)).toContain(jobId);
  });

  it('redrive-batch: a canary whose items fail again halts the job, the CLI says why and exits 6; jobs resume and show --follow finish it', async () => {
    const run = await cli([
      'redrive-batch',
      '--ids',
      'halt-0,halt-1,halt-2',
      '--reason',
      'too early',
      '--allow-failed',
      '--canary',
      '2',
      '--rate',
      '20',
      '--yes',
      '--json',
    ]);
    expect(run.code, run.stderr).toBe(6);
    const job = JSON.parse(run.stdout);
    expect(job).toMatchObject({
      status: 'PAUSED',
      haltReason: expect.stringContaining('canary of 2'),
      counts: { selected: 3, admitted: 2, failedAgain: 2, running: 0 },
    });
    expect(run.stderr).toContain(`is PAUSED: halted, ${job.haltReason} at 2/3 processed`);
    expect(run.stderr).toContain(`either resume with ${AS_STARTED} jobs resume ${job.jobId} or abort with ${AS_STARTED} jobs abort ${job.jobId}`);
    expect(calls.get('halt-2')).toBe(1);

    const resumed = await cli(['jobs', 'resume', job.jobId, '--json']);
    expect([resumed.code, JSON.parse(resumed.stdout).status]).toEqual([0, 'RUNNING']);
    const followed = await cli(['jobs', 'show', job.jobId, '--follow', '--json']);
    expect(followed.code, followed.stderr).toBe(6);
    expect(JSON.parse(followed.stdout)).toMatchObject({ status: 'COMPLETED', counts: { selected: 3, admitted: 3, failedAgain: 3, running: 0 } });
    expect(followed.stderr).toContain('3 item(s) failed again');
    expect(calls.get('halt-2')).toBe(2);
  });

  it('in a terminal: a live progress bar; Ctrl-C holds the job before asking; "r" resumes and the bar goes on to the end', async () => {
    for (const id of TTY_IDS) healthy.add(id);
    let stage: 'bar' | 'asked' | 'done' = 'bar';
    let whileAsked: any;
    const run = await terminal(
      ['redrive-batch', '--ids', TTY_IDS.join(','), '--reason', 'from a terminal', '--allow-failed', '--rate', '0.5', '--yes'],
      (out, type) => {
        if (stage === 'bar' && /\d\/6 \| admitted \d/.test(out)) {
          stage = 'asked';
          type('\x03');
        }
        if (stage === 'asked' && out.includes('Resume, stay paused, or abort? [r/P/a]')) {
          stage = 'done';
          const jobId = /job ([0-9a-f-]{36}) started/.exec(out)![1];
          void cli(['jobs', 'show', jobId, '--json']).then((shown) => {
            whileAsked = JSON.parse(shown.stdout);
            type('r\r');
          });
        }
      },
    );
    expect(run.code, run.out).toBe(0);
    expect(run.out).toMatch(/processed [\u2588\u2591]{40} \d\/6 \| admitted \d+ skipped 0 failed again 0 running \d+ \| .+ \| ETA /);
    const jobId = /job ([0-9a-f-]{36}) started/.exec(run.out)![1];
    expect(whileAsked).toMatchObject({ status: 'PAUSED' });
    const held = new RegExp(`job ${jobId} held \\(PAUSED\\) at (\\d)/6 processed`).exec(run.out);
    expect(held, run.out).not.toBeNull();
    expect(whileAsked.counts.processed - Number(held![1])).toBeLessThanOrEqual(1);
    expect(run.out).toContain(`job ${jobId} RUNNING again`);
    expect(run.out).toMatch(/processed [\u2588]{40} 6\/6/);
    const shown = JSON.parse((await cli(['jobs', 'show', jobId, '--json'])).stdout);
    expect(shown).toMatchObject({ status: 'COMPLETED', counts: { selected: 6, succeeded: 6, running: 0 } });
    expect(shown.controlLog.map((e: any) => e.action)).toEqual(['pause', 'resume']);
  });

  it('through npx in a terminal: the Ctrl-C the whole process group gets is handled, "r" resumes, and the shell sees the CLI\'s own 0', async () => {
    // `npx pipeline-admin` runs the bin (dist/, built by `npm run build`: pretest) under npm exec,
    // which runs it through its script shell: the terminal's Ctrl-C reaches npm, that shell and
    // the CLI at once. Debian's sh (dash) died of it while the CLI went on, so npm re-raised
    // SIGINT on itself and the shell saw 130 whatever the CLI did (.npmrc: script-shell=bash).
    for (const id of NPX_IDS) healthy.add(id);
    let stage: 'bar' | 'asked' | 'done' = 'bar';
    const run = await terminal(
      ['redrive-batch', '--ids', NPX_IDS.join(','), '--reason', 'through npx', '--allow-failed', '--rate', '0.5', '--yes'],
      (out, type) => {
        if (stage === 'bar' && /\d\/4 \| admitted \d/.test(out)) {
          stage = 'asked';
          type('\x03');
        }
        if (stage === 'asked' && out.includes('Resume, stay paused, or abort? [r/P/a]')) {
          stage = 'done';
          type('r\r');
        }
      },
      ['npx', '--no-install', 'pipeline-admin'],
    );
    expect(stage, run.out).toBe('done');
    expect(run.out).toMatch(/job [0-9a-f-]{36} RUNNING again/);
    expect(run.out).toMatch(/processed [\u2588]{40} 4\/4/);
    expect(run.code, run.out).toBe(0);
    const jobId = /job ([0-9a-f-]{36}) started/.exec(run.out)![1];
    const shown = JSON.parse((await cli(['jobs', 'show', jobId, '--json'])).stdout);
    expect(shown).toMatchObject({ status: 'COMPLETED', counts: { selected: 4, succeeded: 4, failedAgain: 0, running: 0 } });
    expect(shown.controlLog.map((e: any) => e.action)).toEqual(['pause', 'resume']);
  });

  it('in a terminal: a second Ctrl-C at the question leaves the job paused, and says how to resume it', async () => {
    const ids = ['tty-pause-0', 'tty-pause-1', 'tty-pause-2'];
    for (const id of ids) {
      await engine.start('acme', { pipeline: 'ledger', executionId: id, input: {} });
      await engine.waitFor('acme', id, ['FAILED']);
      healthy.add(id);
    }
    let stage: 'bar' | 'asked' | 'done' = 'bar';
    const run = await terminal(['redrive-batch', '--ids', ids.join(','), '--reason', 'paused', '--allow-failed', '--rate', '0.2', '--yes'], (out, type) => {
      if (stage === 'bar' && /\d\/3 \| admitted \d/.test(out)) {
        stage = 'asked';
        type('\x03');
      }
      if (stage === 'asked' && out.includes('[r/P/a]')) {
        stage = 'done';
        type('\x03');
      }
    });
    expect(run.code, run.out).toBe(130);
    const jobId = /job ([0-9a-f-]{36}) started/.exec(run.out)![1];
    expect(run.out).toContain(`job ${jobId} stays PAUSED; resume with: ${AS_STARTED} jobs resume ${jobId}`);
    expect(JSON.parse((await cli(['jobs', 'show', jobId, '--json'])).stdout)).toMatchObject({ status: 'PAUSED' });
    expect((await cli(['jobs', 'resume', jobId])).code).toBe(0);
    const followed = await cli(['jobs', 'show', jobId, '--follow', '--json']);
    expect(followed.code, followed.stderr).toBe(0);
    expect(JSON.parse(followed.stdout)).toMatchObject({ status: 'COMPLETED', counts: { selected: 3, succeeded: 3 } });
  });

  it('triage: the tenant, or every tenant without --tenant', async () => {
    const tenant = await cli(['triage', '--json']);
    expect(tenant.code, tenant.stderr).toBe(0);
    expect(JSON.parse(tenant.stdout)).toMatchObject({ windowSeconds: 900, classification: expect.any(String), signals: { executionDlq: expect.any(Object) } });
    const all = await cli(['triage', '--all-tenants', '--window', '1h'], { env: { PIPELINE_TENANT: '' } });
    expect(all.code, all.stderr).toBe(0);
    expect(all.stdout).toMatch(/^all tenants: /);
    // DLQ growth (every envelope here is in the last hour): the class in words, its first action once, the next command; no raw JSON.
    const human = await cli(['triage', '--window', '1h']);
    expect(human.stdout).toMatch(/^acme: systemic_execution_failure \(DLQ growth: executions are failing\), last 60 min against the 60 before\n/);
    expect(human.stdout.match(/stabilise the dependency\/path/g)).toHaveLength(1);
    expect(human.stdout).toMatch(/\n {2}next: node --import tsx src\/cli\/main\.ts dlq groups --error-code LEDGER_DOWN --terminal-reason retry_exhausted /);
    expect(human.stdout).not.toContain('{');
    const none = await cli(['dlq', 'groups'], { env: { PIPELINE_TENANT: '' } });
    expect([none.code, none.stderr]).toEqual([2, expect.stringContaining('no tenant: give --tenant or PIPELINE_TENANT')]);
  });

  it('exits 2 on bad flags, 4 on an unknown execution, 7 on a wrong token, 5 when the service is not there', async () => {
    const usage = await cli(['redrive', 'one']);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("required option '--reason <text>' not specified");
    const noSelection = await cli(['redrive-batch', '--reason', 'x']);
    expect([noSelection.code, noSelection.stderr]).toEqual([2, expect.stringContaining('select what to re-drive')]);
    const missing = await cli(['executions', 'show', 'nobody']);
    expect([missing.code, missing.stderr]).toEqual([4, expect.stringContaining('EXECUTION_NOT_FOUND')]);
    const token = await cli(['dlq', 'list'], { env: { PIPELINE_TOKEN: 'wrong' } });
    expect([token.code, token.stderr]).toEqual([7, expect.stringContaining('401 UNAUTHORIZED')]);
    // A leased port nothing listens on (verified by binding it), kept ours while the CLI tries it.
    const nobody = await leasePort();
    const down = await cli(['dlq', 'list'], { env: { PIPELINE_URL: `http://127.0.0.1:${nobody.port}/pipeline` } }).finally(() => nobody.release());
    expect([down.code, down.stderr]).toEqual([5, expect.stringContaining('connection refused')]);
  });
});

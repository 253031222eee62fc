/**
 * Every command a hint prints runs as printed. The CLI is driven as a child process against the
 * real service (dev server, Postgres) with its settings given as flags only (`--url`,
 * `--token-file`, `--tenant`; no PIPELINE_* variable, no config file), as the README's commands
 * give `--tenant`; each hint it prints is parsed from its output and run by bash in the
 * repository's root, and must do what it says: never `command not found` (127) or a usage
 * error (2), and the answer or effect it promises (the execution shown, the job resumed or
 * aborted, the group re-driven). The job's Temporal UI details (written by the workflow and the
 * service, in the `npx pipeline-admin` form a checkout runs) are run the same way.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rememberFlags } from '../../src/cli/invoked';
import { triageNext } from '../../src/cli/commands/read';
import { definePipeline, localStep } from '../../src/pipeline/define';
import { jobWorkflowId } from '../../src/service/redrive-jobs';
import { AS_STARTED, type Run, runCli, type RunOptions, spawnRun } from '../helpers/cli-runner';
import { ADMIN_TOKEN, startTestEngine, type TestEngine } from '../helpers/engine';
import { scaled } from '../helpers/time-scale';
import { until } from '../helpers/until';

const TENANT = 'hints';
let engine: TestEngine;
let url: string;
const tokenFile = join(mkdtempSync(join(tmpdir(), 'cli-hints-')), 'admin-token');
const healthy = new Set<string>();
/** executions whose `wait` step holds until released */
const released = new Set<string>();
const calls = new Map<string, number>();
const count = (id: string) => calls.set(id, (calls.get(id) ?? 0) + 1);

const pipelines = [
  definePipeline({
    name: 'ledger',
    steps: [
      localStep(
        'book',
        (input: unknown, ctx) => {
          count(ctx.executionId);
          if (healthy.has(ctx.executionId)) return input;
          throw Object.assign(new Error('ledger down'), { code: 'LEDGER_DOWN' });
        },
        { retry: { limit: 0 } },
      ),
    ],
  }),
  definePipeline({
    name: 'payments',
    steps: [
      localStep(
        'pay',
        (_input: unknown, ctx) => {
          count(ctx.executionId);
          throw Object.assign(new Error('card network down'), { code: 'PAY_DOWN' });
        },
        { command: true, retry: { limit: 0 } },
      ),
    ],
  }),
  // Fails until healthy; once healthy it holds until released (a run still going when the CLI stops following).
  definePipeline({
    name: 'slow',
    steps: [
      localStep(
        'wait',
        async (input: unknown, ctx) => {
          count(ctx.executionId);
          if (!healthy.has(ctx.executionId)) throw Object.assign(new Error('not yet'), { code: 'NOT_YET' });
          while (!released.has(ctx.executionId) && !ctx.signal.aborted) await new Promise((resolve) => setTimeout(resolve, 20));
          return input;
        },
        { retry: { limit: 0 } },
      ),
    ],
  }),
];

/** No setting from the environment: only the flags reach the service. */
const BARE_ENV = { ...process.env, PIPELINE_URL: '', PIPELINE_TOKEN: '', PIPELINE_TENANT: '', PIPELINE_ADMIN_CONFIG: '' };
type Options = RunOptions & { env?: NodeJS.ProcessEnv };

/** The CLI with its settings as flags (the source through tsx: its hints name it `AS_STARTED`). */
const cli = (args: string[], options: Options = {}) =>
  runCli(['--url', url, '--token-file', tokenFile, '--tenant', TENANT, ...args], options.env ?? BARE_ENV, options);

/** A printed command, run as printed: bash, the repository's root, the settings of nowhere but the command itself. */
const bash = (command: string, options: Options = {}) => spawnRun('bash', ['-c', command], options.env ?? BARE_ENV, options);

/**
 * The commands a text prints: each from the CLI's name to where the sentence goes on (a
 * closing parenthesis, three spaces before a note, " or " between two commands, the line's end).
 */
function printed(text: string, prefix = AS_STARTED): string[] {
  const found: string[] = [];
  for (const line of text.split('\n')) {
    let at = line.indexOf(prefix);
    while (at !== -1) {
      const rest = line.slice(at);
      const ends = [rest.indexOf(')'), rest.indexOf('   '), rest.indexOf(' or '), rest.indexOf('`')].filter((i) => i > 0);
      const command = rest.slice(0, ends.length ? Math.min(...ends) : undefined).trim();
      found.push(command);
      at = line.indexOf(prefix, at + command.length);
    }
  }
  return found;
}

const job = async (jobId: string) => (await (await engine.request('GET', `/admin/tenants/${TENANT}/redrive-jobs/${jobId}`)).json()) as any;

/** Runs each printed command and checks it did not fail to start or to parse, then what it answered. */
async function runEach(commands: string[], check: (command: string, run: Run) => Promise<void> | void, input?: string) {
  for (const command of commands) {
    const run = await bash(command, { input });
    expect(run.code, `${command}\n${run.stderr}`).not.toBe(127);
    expect(run.code, `${command}\n${run.stderr}`).not.toBe(2);
    await check(command, run);
  }
}

beforeAll(async () => {
  engine = await startTestEngine(pipelines, { 'pipeline.server.port': 0 }, { http: true });
  url = `http://127.0.0.1:${engine.service.ports.http}/pipeline`;
  writeFileSync(tokenFile, ADMIN_TOKEN, { mode: 0o600 });
  const ledger = ['two', 'halt-0', 'halt-1', 'halt-2', 'paused-0', 'paused-1', 'paused-2'];
  for (const id of ledger) await engine.start(TENANT, { pipeline: 'ledger', executionId: id, input: {} });
  for (const id of ['pay-0', 'pay-1']) await engine.start(TENANT, { pipeline: 'payments', executionId: id, input: {} });
  for (const id of ['slow-0', 'slow-1', 'slow-2', 'slow-3']) await engine.start(TENANT, { pipeline: 'slow', executionId: id, input: {} });
  for (const id of [...ledger, 'pay-0', 'pay-1', 'slow-0', 'slow-1', 'slow-2', 'slow-3']) await engine.waitFor(TENANT, id, ['FAILED']);
});
afterAll(async () => {
  for (const id of ['slow-0', 'slow-1', 'slow-2', 'slow-3']) released.add(id);
  await engine?.stop();
});

describe('every hint the CLI prints runs as printed', { timeout: scaled(300_000) }, () => {
  it("triage's next command, and the curl commands of its other findings", async () => {
    const human = await cli(['triage', '--window', '1h']);
    expect(human.code, human.stderr).toBe(0);
    const commands = printed(human.stdout);
    expect(commands).toEqual([
      `${AS_STARTED} --url ${url} --token-file ${tokenFile} --tenant ${TENANT} dlq groups --error-code LEDGER_DOWN --terminal-reason retry_exhausted`,
    ]);
    await runEach(commands, (_command, run) => {
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toMatch(/^GROUP +COUNT +STEP +CODE/);
      expect(run.stdout).toContain('LEDGER_DOWN');
    });
    // Across tenants the hint names TENANT, a word to replace (never `<tenant>`, a redirection to bash).
    const all = await cli(['triage', '--all-tenants', '--window', '1h']);
    expect(all.code, all.stderr).toBe(0);
    const [acrossTenants] = printed(all.stdout);
    expect(acrossTenants).toContain(' dlq groups --tenant TENANT --error-code');
    expect(acrossTenants).not.toContain(`--tenant ${TENANT}`);
    await runEach([acrossTenants.replace('TENANT', TENANT)], (_command, run) => expect(run.stdout).toContain('LEDGER_DOWN'));

    // The findings this service does not show now: the curl commands they print, as printed.
    rememberFlags({ url, tokenFile, tenant: TENANT });
    const curls = [
      triageNext({ classification: 'admission_pressure', detail: {} }, TENANT, url)!,
      triageNext({ classification: 'data_quality_drift', detail: {} }, TENANT, url)!,
    ].map((hint) => hint.split('   ')[0]);
    const [ready, rejects] = await Promise.all(curls.map((command) => bash(command)));
    expect([ready.code, JSON.parse(ready.stdout).status], curls[0]).toEqual([0, 'ready']);
    expect([rejects.code, JSON.parse(rejects.stdout)], curls[1]).toEqual([0, expect.objectContaining({ items: [] })]);
  });

  it("dlq groups: each group's re-drive command (answered yes) re-drives the group", async () => {
    const groups = await cli(['dlq', 'groups']);
    expect(groups.code, groups.stderr).toBe(0);
    const commands = printed(groups.stdout);
    expect(commands.map((c) => c.replace(/--group [0-9a-f]+/, '--group G'))).toEqual(
      expect.arrayContaining([
        `${AS_STARTED} --url ${url} --token-file ${tokenFile} --tenant ${TENANT} redrive-batch --group G --reason "…" --allow-failed --intent RETRY_FAILED_COMMAND`,
      ]),
    );
    const pay = commands.find((c) => c.endsWith('--intent RETRY_FAILED_COMMAND'))!;
    await runEach(
      [pay],
      async (_command, run) => {
        // Admitted and followed: the Command step ran again and failed again (6).
        expect(run.stderr).toContain('2 executions match; 2 would be re-driven');
        expect(run.stderr).toMatch(/job [0-9a-f-]{36} started/);
        expect(run.code, run.stderr).toBe(6);
        expect([calls.get('pay-0'), calls.get('pay-1')]).toEqual([2, 2]);
      },
      'y\n',
    );
    // The other groups' commands re-drive executions this file's later tests use: each is run as printed with --dry-run.
    const others = commands.filter((c) => !c.endsWith('--intent RETRY_FAILED_COMMAND'));
    expect(others).toHaveLength(2); // LEDGER_DOWN and NOT_YET
    await runEach(
      others.map((c) => `${c} --dry-run`),
      (_command, run) => {
        expect(run.code, run.stderr).toBe(0);
        expect(run.stderr).toMatch(/\d+ executions match; \d+ would be re-driven, refused: none/);
      },
    );
  });

  it('a re-drive that fails again: "see why" shows the execution', async () => {
    const run = await cli(['redrive', 'two', '--reason', 'try again', '--allow-failed', '--yes']);
    expect(run.code, run.stderr).toBe(6);
    const commands = printed(run.stderr);
    expect(commands).toEqual([`${AS_STARTED} --url ${url} --token-file ${tokenFile} --tenant ${TENANT} executions show two`]);
    await runEach(commands, (_command, shown) => {
      expect(shown.code, shown.stderr).toBe(0);
      expect(shown.stdout).toMatch(/^two {2}FAILED {2}version \d+/);
    });
  });

  it('a re-drive still running when following stops (a timeout, Ctrl-C): the execution, shown', async () => {
    healthy.add('slow-0').add('slow-1');
    const timedOut = await cli(['redrive', 'slow-0', '--reason', 'r', '--allow-failed', '--yes', '--follow-timeout', '1']);
    expect(timedOut.code, timedOut.stderr).toBe(5);
    let interrupted = false;
    const stopped = await cli(['redrive', 'slow-1', '--reason', 'r', '--allow-failed', '--yes'], {
      onStderr: (text, child) => {
        if (!interrupted && /RUNNING step 0 attempt 2/.test(text)) {
          interrupted = true;
          child.kill('SIGINT');
        }
      },
    });
    expect(stopped.code, stopped.stderr).toBe(130);
    const commands = [...printed(timedOut.stderr), ...printed(stopped.stderr)];
    expect(commands).toEqual(['slow-0', 'slow-1'].map((id) => `${AS_STARTED} --url ${url} --token-file ${tokenFile} --tenant ${TENANT} executions show ${id}`));
    await runEach(commands, (command, shown) => {
      expect(shown.code, shown.stderr).toBe(0);
      expect(shown.stdout).toMatch(new RegExp(`^${command.split(' ').at(-1)} {2}(QUEUED|RUNNING) `));
    });
  });

  it('a halted job: dlq groups, then resume, then abort, each as printed', async () => {
    // The canary's two items fail again: the job halts.
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
    ]);
    expect(run.code, run.stderr).toBe(6);
    const jobId = /job ([0-9a-f-]{36}) started/.exec(run.stderr)![1];
    const commands = printed(run.stderr);
    const prefix = `${AS_STARTED} --url ${url} --token-file ${tokenFile} --tenant ${TENANT}`;
    expect(commands).toEqual([`${prefix} dlq groups`, `${prefix} jobs resume ${jobId}`, `${prefix} jobs abort ${jobId} --reason …`]);
    await runEach(commands.slice(0, 1), (_command, groups) => expect(groups.stdout).toContain('LEDGER_DOWN'));
    await runEach(commands.slice(1, 2), async (_command, resumed) => {
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(resumed.stdout).toMatch(new RegExp(`^${jobId} {2}RUNNING`));
    });
    // Aborted, or (the resumed job's last item admitted first) refused as finished: either way the service took the command.
    await runEach(commands.slice(2), async (_command, aborted) => {
      if (aborted.code === 3) expect(aborted.stderr).toContain('JOB_FINISHED');
      else expect([aborted.code, aborted.stdout]).toEqual([0, expect.stringMatching(new RegExp(`^${jobId} {2}ABORTED`))]);
    });
    expect((await job(jobId)).controlLog.map((e: any) => e.action)).toEqual(expect.arrayContaining(['halt', 'resume']));
  });

  it('Ctrl-C, then "stay paused": resume and abort as printed; a job still running when following stops: shown', async () => {
    let interrupted = false;
    let answered = false;
    const run = await cli(['redrive-batch', '--ids', 'paused-0,paused-1,paused-2', '--reason', 'slowly', '--allow-failed', '--rate', '0.2', '--yes'], {
      onStderr: (text, child) => {
        if (!interrupted && /processed: \d+ admitted/.test(text)) {
          interrupted = true;
          child.kill('SIGINT');
        }
        if (!answered && text.includes('[r/P/a]')) {
          answered = true;
          child.stdin!.end('p\n');
        }
      },
    });
    expect(run.code, run.stderr).toBe(130);
    const jobId = /job ([0-9a-f-]{36}) started/.exec(run.stderr)![1];
    const prefix = `${AS_STARTED} --url ${url} --token-file ${tokenFile} --tenant ${TENANT}`;
    const commands = printed(run.stderr);
    expect(commands).toEqual([`${prefix} jobs resume ${jobId}`, `${prefix} jobs abort ${jobId} --reason …`]);
    await runEach(commands.slice(0, 1), (_command, resumed) => expect(resumed.stdout).toMatch(new RegExp(`^${jobId} {2}RUNNING`)));

    // Following the resumed job for a second: it goes on, and the hint shows it.
    const followed = await cli(['jobs', 'show', jobId, '--follow', '--follow-timeout', '1']);
    expect(followed.code, followed.stderr).toBe(5);
    const show = printed(followed.stderr);
    expect(show).toEqual([`${prefix} jobs show ${jobId}`]);
    await runEach(show, (_command, shown) => expect(shown.stdout).toMatch(new RegExp(`^${jobId} {2}RUNNING`)));

    await runEach(commands.slice(1), (_command, aborted) => expect(aborted.stdout).toMatch(new RegExp(`^${jobId} {2}ABORTED`)));
    expect((await job(jobId)).status).toBe('ABORTED');
  });

  it("a job's Temporal UI details: each command in them runs as printed from the checkout (npx pipeline-admin)", async () => {
    healthy.add('slow-2').add('slow-3');
    const created = await engine.request('POST', `/admin/tenants/${TENANT}/redrive-jobs`, {
      // A canary of 1 whose run holds (slow-2 healthy, not released): the job stays RUNNING until
      // the test aborts it, however slowly the commands below run (a rate alone raced them).
      body: { selection: { executionIds: ['slow-2', 'slow-3'] }, reason: 'from the UI', allowFailed: true, canary: 1, ratePerSecond: 5 },
    });
    expect(created.status).toBe(202);
    const { jobId } = (await created.json()) as { jobId: string };
    const handle = engine.service.client.workflow.getHandle(jobWorkflowId(TENANT, jobId));
    let current = '';
    await until(
      async () => {
        current = (await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata')).currentDetails ?? '';
        return current.includes('**Control**');
      },
      60_000,
      "the running job's current details",
    );
    const staticDetails = (await (await handle.describe()).staticDetails()) ?? '';
    const uiCommands = (text: string) => [...text.matchAll(/`(npx pipeline-admin [^`]+)`/g)].map((m) => m[1]);
    const commands = [...uiCommands(staticDetails), ...uiCommands(current)];
    expect(commands).toEqual([
      `npx pipeline-admin jobs show ${jobId} --tenant ${TENANT}`,
      `npx pipeline-admin jobs show ${jobId} --tenant ${TENANT}`,
      `npx pipeline-admin jobs pause ${jobId} --tenant ${TENANT}`,
      `npx pipeline-admin jobs abort ${jobId} --tenant ${TENANT}`,
    ]);
    // From a checkout the service runs in, npx runs the build with the settings found there (here: the engine's URL and token).
    const env = { ...process.env, PIPELINE_URL: url, PIPELINE_TOKEN: ADMIN_TOKEN, PIPELINE_TENANT: '', PIPELINE_ADMIN_CONFIG: '' };
    const expected = ['RUNNING', 'RUNNING', 'PAUSED', 'ABORTED'];
    for (const [i, command] of commands.entries()) {
      const run = await bash(command, { env });
      expect(run.code, `${command}\n${run.stderr}`).toBe(0);
      expect(run.stdout, command).toMatch(new RegExp(`^${jobId} {2}${expected[i]}`));
    }
    // Paused: the details name resume and abort instead.
    expect((await job(jobId)).status).toBe('ABORTED');
  });
});

/**
 * The Prometheus alert rules (ops/prometheus/alerts.yml) and the Grafana dashboard
 * (ops/grafana/pipeline-dashboard.json) against the real thing:
 * - `promtool check rules` and the rules' own unit tests (`promtool test rules`);
 * - a live /metrics scrape of a running service passes `promtool check metrics`, holds every
 *   metric the alerts and the dashboard name, and, turned into promtool input series (its
 *   real names and label sets), keeps every alert quiet as it is and fires each one when
 *   only that alert's series are pushed past its threshold.
 * promtool ships in Debian's `prometheus` package (`.ci/run` installs it); without it these
 * tests are skipped with a message saying so.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { definePipeline, localStep } from '../../src/pipeline/define';
import { startTestEngine, type TestEngine } from '../helpers/engine';
import { until } from '../helpers/until';

const RULES = resolve('ops/prometheus/alerts.yml');
const DASHBOARD = resolve('ops/grafana/pipeline-dashboard.json');

function findPromtool(): string | undefined {
  const found = spawnSync('sh', ['-c', 'command -v promtool'], { encoding: 'utf8' });
  return found.status === 0 ? found.stdout.trim() : undefined;
}
const promtool = findPromtool();
if (!promtool)
  console.warn('alerts.test.ts: promtool not found; install it with `apt-get install -y prometheus` (.ci/run does). Skipping the promtool checks.');

const run = (args: string[], input?: string) => spawnSync(promtool!, args, { encoding: 'utf8', input });

/** What each alert watches, its labels, and how to push only its series past its threshold (value → promtool values). */
const ALERTS: Record<string, { labels: Record<string, string>; push: Record<string, (value: number) => string> }> = {
  PipelineExecutionDlqGrowing: { labels: { severity: 'page', channel: 'execution-dlq' }, push: { pipeline_execution_dlq_backlog: (v) => `${v}+1x45` } },
  PipelineRejectFingerprintConcentration: {
    labels: { severity: 'ticket', channel: 'item-reject-sink' },
    push: { pipeline_item_reject_top_fingerprint_share: () => '0.9x45', pipeline_item_rejects_total: (v) => `${v}+5x45` },
  },
  PipelineCheckpointLag: { labels: { severity: 'page', channel: 'checkpoint-publication' }, push: { pipeline_checkpoint_lag_seconds: () => '900x45' } },
  PipelineDispatchLag: { labels: { severity: 'page', channel: 'checkpoint-publication' }, push: { pipeline_dispatch_lag_seconds: () => '900x45' } },
  PipelineRemoteOutcomeUnknownParks: {
    labels: { severity: 'ticket', channel: 'execution-dlq' },
    push: { pipeline_executions_remote_outcome_unknown: () => '3x45' },
  },
  PipelineRetrySaturation: { labels: { severity: 'ticket', channel: 'execution-dlq' }, push: { pipeline_retry_saturation: () => '50x45' } },
  PipelineRedriveJobStuck: { labels: { severity: 'ticket', channel: 'execution-dlq' }, push: { pipeline_redrive_jobs: () => '1x45' } },
};

interface Sample {
  name: string;
  labels: string;
  value: number;
}

/** The samples of a Prometheus text exposition (histogram buckets included). */
function samplesOf(scrape: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of scrape.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)$/.exec(line);
    if (!match) throw new Error(`not an exposition line: ${line}`);
    const value = Number(match[3]);
    if (!Number.isFinite(value)) continue;
    samples.push({ name: match[1], labels: match[2] ?? '{}', value });
  }
  return samples;
}

/** The rules without annotations, so a test can expect an alert by its labels alone. */
function rulesWithoutAnnotations(dir: string): string {
  const out: string[] = [];
  let skipIndent = -1;
  for (const line of readFileSync(RULES, 'utf8').split('\n')) {
    const indent = line.length - line.trimStart().length;
    if (skipIndent >= 0 && (line.trim() === '' || indent > skipIndent)) continue;
    skipIndent = -1;
    if (line.trim() === 'annotations:') {
      skipIndent = indent;
      continue;
    }
    out.push(line);
  }
  const file = join(dir, 'alerts-no-annotations.yml');
  writeFileSync(file, out.join('\n'));
  return file;
}

let engine: TestEngine;
let scrape = '';

describe.skipIf(!promtool)('alert rules and dashboard (promtool)', () => {
  beforeAll(async () => {
    // A service with one execution that succeeded and rejected an item, so the labelled counters exist too.
    const pipeline = definePipeline({
      name: 'alerting',
      steps: [
        localStep('filter', (input: unknown, ctx) => {
          ctx.reject({ sku: 'x' }, { errorCode: 'INVALID_SKU', reason: 'not in the catalogue' });
          return input;
        }),
      ],
    });
    engine = await startTestEngine([pipeline]);
    await engine.start('acme', { pipeline: 'alerting', executionId: 'alert-1', input: {} });
    await engine.waitFor('acme', 'alert-1', ['SUCCEEDED']);
    // The step counts its rejects just after its commit, in the same tick as this log line:
    // another connection can read the committed record first (s20b, stop 32), so scrape once the line is out.
    await until(
      () => engine.logs.some((line) => line.event === 'item_rejects_committed' && line.executionId === 'alert-1'),
      30_000,
      "the step's rejects counted",
    );
    const res = await engine.service.app.request('/metrics');
    expect(res.status).toBe(200);
    scrape = await res.text();
  });
  afterAll(async () => {
    await engine?.stop();
  });

  it('passes promtool check rules and the rules unit tests', () => {
    const checked = run(['check', 'rules', RULES]);
    expect(checked.stdout + checked.stderr).toContain('SUCCESS: 7 rules found');
    expect(checked.status).toBe(0);
    const tested = spawnSync(promtool!, ['test', 'rules', 'alerts.test.yml'], { cwd: resolve('ops/prometheus'), encoding: 'utf8' });
    expect(tested.stdout + tested.stderr).toContain('SUCCESS');
    expect(tested.status).toBe(0);
  });

  it('lints the live scrape, which holds every metric the alerts and the dashboard use', () => {
    const linted = run(['check', 'metrics'], scrape);
    expect(linted.stdout + linted.stderr, 'promtool check metrics').toBe('');
    expect(linted.status).toBe(0);

    const exposed = new Set(samplesOf(scrape).map((sample) => sample.name));
    const used = (text: string) => new Set([...text.matchAll(/\b(pipeline_[a-z_]+)\b/g)].map((m) => m[1]));
    const exprs = [...readFileSync(RULES, 'utf8').matchAll(/expr:([\s\S]*?)\n\s+for:/g)].map((m) => m[1]).join('\n');
    expect(used(exprs).size).toBeGreaterThanOrEqual(6);
    for (const name of used(exprs)) expect(exposed, `alerts.yml uses ${name}`).toContain(name);
    // The dashboard may chart labelled counters that have no sample yet: they must at least be declared (# TYPE).
    const declared = new Set([...scrape.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => m[1]));
    const dashboard = readFileSync(DASHBOARD, 'utf8');
    expect(JSON.parse(dashboard).panels.length).toBeGreaterThan(15);
    for (const name of used(dashboard)) expect(declared, `the dashboard uses ${name}`).toContain(name.replace(/_bucket$/, ''));
  });

  it('evaluates every alert on the live series: quiet as scraped, firing when only its own series cross the threshold', () => {
    const dir = mkdtempSync(join(tmpdir(), 'alerts-'));
    const rules = rulesWithoutAnnotations(dir);
    const samples = samplesOf(scrape);
    const seriesLine = (sample: Sample, values: string) => {
      const inner = sample.labels.slice(1, -1);
      return `      - series: '${sample.name}{${inner ? `${inner},` : ''}job="pipeline",instance="live"}'\n        values: '${values}'`;
    };
    const testCase = (name: string, push: Record<string, (value: number) => string>, expected: string) => {
      const series = samples.map((sample) => seriesLine(sample, push[sample.name]?.(sample.value) ?? `${sample.value}x45`));
      const pushed = Object.keys(push).filter((metric) => samples.some((sample) => sample.name === metric));
      expect(pushed, `${name}: the live scrape has the series it pushes`).toEqual(Object.keys(push));
      return `  - interval: 1m\n    input_series:\n${series.join('\n')}\n    alert_rule_test:\n${expected}`;
    };
    const quiet = Object.keys(ALERTS)
      .map((alert) => `      - eval_time: 40m\n        alertname: ${alert}\n        exp_alerts: []`)
      .join('\n');
    const cases = [testCase('as scraped', {}, quiet)];
    for (const [alert, spec] of Object.entries(ALERTS)) {
      const labels = Object.entries({ job: 'pipeline', ...spec.labels })
        .map(([k, v]) => `${k}: ${v}`)
        .join(', ');
      const others = Object.keys(ALERTS)
        .filter((other) => other !== alert)
        .map((other) => `      - eval_time: 40m\n        alertname: ${other}\n        exp_alerts: []`);
      cases.push(
        testCase(
          alert,
          spec.push,
          [`      - eval_time: 40m\n        alertname: ${alert}\n        exp_alerts:\n          - exp_labels: { ${labels} }`, ...others].join('\n'),
        ),
      );
    }
    const file = join(dir, 'live.test.yml');
    writeFileSync(file, `rule_files:\n  - ${rules}\nevaluation_interval: 1m\ntests:\n${cases.join('\n')}\n`);
    const tested = spawnSync(promtool!, ['test', 'rules', file], { encoding: 'utf8' });
    expect(tested.stdout + tested.stderr).toContain('SUCCESS');
    expect(tested.status).toBe(0);
  });
});

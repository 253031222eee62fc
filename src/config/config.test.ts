import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../errors';
import { bulkRunTaskQueue, envName, loadConfig } from './config';

describe('loadConfig', () => {
  it('applies the spec defaults', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      'pipeline.orchestrator.mode': 'QUEUE_ASYNC',
      'pipeline.orchestrator.dlq-provider': 'postgres',
      'pipeline.orchestrator.worker.rest.request-timeout': 30_000,
      'pipeline.defaults.retry-limit': 5,
      'pipeline.defaults.retry-wait-ms': 1000,
      'pipeline.defaults.max-backoff': 30_000,
      'pipeline.defaults.jitter': true,
      'pipeline.admin.prefix': 'pipeline',
    });
  });

  it('reads environment variables by key name and accepts every duration form', () => {
    expect(envName('pipeline.orchestrator.worker.rest.request-timeout')).toBe('PIPELINE_ORCHESTRATOR_WORKER_REST_REQUEST_TIMEOUT');
    for (const [text, ms] of [
      ['30s', 30_000],
      ['1500ms', 1500],
      ['PT30S', 30_000],
    ] as const) {
      expect(loadConfig({ PIPELINE_ORCHESTRATOR_WORKER_REST_REQUEST_TIMEOUT: text })['pipeline.orchestrator.worker.rest.request-timeout']).toBe(ms);
    }
    expect(loadConfig({ PIPELINE_DEFAULTS_RETRY_LIMIT: '0', PIPELINE_DEFAULTS_JITTER: 'false' })).toMatchObject({
      'pipeline.defaults.retry-limit': 0,
      'pipeline.defaults.jitter': false,
    });
  });

  it('names the key of a bad duration', () => {
    expect(() => loadConfig({ PIPELINE_ORCHESTRATOR_WORKER_REST_REQUEST_TIMEOUT: 'soon' })).toThrow(
      /pipeline\.orchestrator\.worker\.rest\.request-timeout must be a duration/,
    );
  });

  it("reads the store pool and the bulk jobs' own pool and task queue, naming the key of a bad value", () => {
    expect(loadConfig({})).toMatchObject({
      'pipeline.store.pool-size': 10,
      'pipeline.store.acquire-timeout': 5000,
      'pipeline.store.idle-timeout': 10_000,
      'pipeline.redrive-job.pool-size': 8,
    });
    expect(loadConfig({ PIPELINE_STORE_IDLE_TIMEOUT: '2s' })['pipeline.store.idle-timeout']).toBe(2000);
    expect(loadConfig({})['pipeline.store.prepared-statements']).toBe(true);
    expect(loadConfig({ PIPELINE_STORE_PREPARED_STATEMENTS: 'false' })['pipeline.store.prepared-statements']).toBe(false);
    expect(() => loadConfig({ PIPELINE_STORE_PREPARED_STATEMENTS: 'no' })).toThrow(/pipeline\.store\.prepared-statements/);
    expect(() => loadConfig({ PIPELINE_STORE_IDLE_TIMEOUT: '0ms' })).toThrow(/pipeline\.store\.idle-timeout/);
    expect(loadConfig({}, { 'pipeline.redrive-job.task-queue': undefined })['pipeline.redrive-job.task-queue']).toBeUndefined();
    const set = loadConfig({ PIPELINE_STORE_POOL_SIZE: '32', PIPELINE_STORE_ACQUIRE_TIMEOUT: '750ms', PIPELINE_REDRIVE_JOB_TASK_QUEUE: 'jobs' });
    expect(set).toMatchObject({ 'pipeline.store.pool-size': 32, 'pipeline.store.acquire-timeout': 750, 'pipeline.redrive-job.task-queue': 'jobs' });
    expect(() => loadConfig({ PIPELINE_STORE_POOL_SIZE: '0' })).toThrow(/pipeline\.store\.pool-size/);
    expect(() => loadConfig({ PIPELINE_STORE_ACQUIRE_TIMEOUT: 'never' })).toThrow(/pipeline\.store\.acquire-timeout/);
    expect(() => loadConfig({ PIPELINE_REDRIVE_JOB_POOL_SIZE: 'many' })).toThrow(/pipeline\.redrive-job\.pool-size/);
    // A job's runs' Temporal priority: 4 by default, 1–5, anything else names the key.
    expect(loadConfig({})['pipeline.redrive-job.priority']).toBe(4);
    expect(loadConfig({ PIPELINE_REDRIVE_JOB_PRIORITY: '5' })['pipeline.redrive-job.priority']).toBe(5);
    for (const bad of ['0', '6', '2.5', 'low']) expect(() => loadConfig({ PIPELINE_REDRIVE_JOB_PRIORITY: bad })).toThrow(/pipeline\.redrive-job\.priority/);
    // A job yields to live traffic when told to (off by default); anything but a boolean names the key.
    expect(loadConfig({})['pipeline.redrive-job.yield-to-live']).toBe(false);
    expect(loadConfig({ PIPELINE_REDRIVE_JOB_YIELD_TO_LIVE: 'true' })['pipeline.redrive-job.yield-to-live']).toBe(true);
    expect(() => loadConfig({ PIPELINE_REDRIVE_JOB_YIELD_TO_LIVE: 'sometimes' })).toThrow(/pipeline\.redrive-job\.yield-to-live/);
    // Bulk jobs' runs: on the pipelines' queue unless given their own; a worker that runs only one kind needs the two apart.
    expect(bulkRunTaskQueue(loadConfig({}))).toBe('pipeline');
    expect(loadConfig({})['pipeline.orchestrator.worker.runs']).toBe('all');
    const apart = { PIPELINE_REDRIVE_JOB_RUN_TASK_QUEUE: 'pipeline-bulk' };
    expect(bulkRunTaskQueue(loadConfig(apart))).toBe('pipeline-bulk');
    for (const runs of ['live', 'bulk'])
      expect(loadConfig({ ...apart, PIPELINE_ORCHESTRATOR_WORKER_RUNS: runs })['pipeline.orchestrator.worker.runs']).toBe(runs);
    for (const env of [
      { PIPELINE_ORCHESTRATOR_WORKER_RUNS: 'bulk' },
      { PIPELINE_ORCHESTRATOR_WORKER_RUNS: 'live', PIPELINE_REDRIVE_JOB_RUN_TASK_QUEUE: 'pipeline' },
    ])
      expect(() => loadConfig(env)).toThrow(
        /pipeline\.orchestrator\.worker\.runs=(bulk|live) needs pipeline\.redrive-job\.run-task-queue set to a task queue other than/,
      );
    expect(() => loadConfig({ ...apart, PIPELINE_ORCHESTRATOR_WORKER_RUNS: 'some' })).toThrow(
      /pipeline\.orchestrator\.worker\.runs must be one of all, live, bulk/,
    );
    // The worker's workflow cache: the SDK's default when unset; 0 (off) or at least 2, a whole number.
    expect(loadConfig({})['pipeline.orchestrator.worker.max-cached-workflows']).toBeUndefined();
    for (const [text, n] of [
      ['0', 0],
      ['2', 2],
      ['250', 250],
    ] as const)
      expect(loadConfig({ PIPELINE_ORCHESTRATOR_WORKER_MAX_CACHED_WORKFLOWS: text })['pipeline.orchestrator.worker.max-cached-workflows']).toBe(n);
    expect(() => loadConfig({ PIPELINE_ORCHESTRATOR_WORKER_MAX_CACHED_WORKFLOWS: '1' })).toThrow(
      /pipeline\.orchestrator\.worker\.max-cached-workflows: must be 0 \(no cache\) or at least 2/,
    );
    for (const bad of ['-3', '2.5', 'lots'])
      expect(() => loadConfig({ PIPELINE_ORCHESTRATOR_WORKER_MAX_CACHED_WORKFLOWS: bad })).toThrow(/pipeline\.orchestrator\.worker\.max-cached-workflows/);
  });

  it('names the key of an unknown DLQ provider and lists the known ones', () => {
    expect(() => loadConfig({ PIPELINE_ORCHESTRATOR_DLQ_PROVIDER: 'kafka' })).toThrow(ConfigError);
    expect(() => loadConfig({ PIPELINE_ORCHESTRATOR_DLQ_PROVIDER: 'kafka' })).toThrow(
      /pipeline\.orchestrator\.dlq-provider: unknown provider "kafka"; expected one of postgres, sqs, rabbitmq/,
    );
  });

  it('accepts the sqs and rabbitmq providers with their URLs, and names the problem with a bad one', () => {
    expect(
      loadConfig({ PIPELINE_ORCHESTRATOR_DLQ_PROVIDER: 'sqs', PIPELINE_ORCHESTRATOR_DLQ_URL: 'https://sqs.eu-west-1.amazonaws.com/123456789012/dlq.fifo' })[
        'pipeline.orchestrator.dlq-provider'
      ],
    ).toBe('sqs');
    expect(
      loadConfig({ PIPELINE_ORCHESTRATOR_DLQ_PROVIDER: 'rabbitmq', PIPELINE_ORCHESTRATOR_DLQ_URL: 'amqp://guest:guest@localhost:5672/%2F?queue=dlq' })[
        'pipeline.orchestrator.dlq-provider'
      ],
    ).toBe('rabbitmq');
    expect(() => loadConfig({ PIPELINE_ORCHESTRATOR_DLQ_PROVIDER: 'sqs' })).toThrow(/pipeline\.orchestrator\.dlq-url is required for provider sqs/);
    expect(() =>
      loadConfig({ PIPELINE_ORCHESTRATOR_DLQ_PROVIDER: 'sqs', PIPELINE_ORCHESTRATOR_DLQ_URL: 'https://sqs.eu-west-1.amazonaws.com/123/dlq' }),
    ).toThrow(/FIFO queue URL/);
    expect(() => loadConfig({ PIPELINE_ORCHESTRATOR_DLQ_PROVIDER: 'rabbitmq', PIPELINE_ORCHESTRATOR_DLQ_URL: 'http://localhost:5672' })).toThrow(
      /amqp:\/\/ or amqps:\/\//,
    );
    expect(() => loadConfig({ PIPELINE_ORCHESTRATOR_DLQ_PROVIDER: 'rabbitmq', PIPELINE_ORCHESTRATOR_DLQ_URL: 'amqp://h/?queue=bad name' })).toThrow(
      /queue "bad name"/,
    );
  });

  it('rejects a DLQ URL that is not a URL, or of the wrong kind', () => {
    expect(() => loadConfig({ PIPELINE_ORCHESTRATOR_DLQ_URL: 'not a url' })).toThrow(/pipeline\.orchestrator\.dlq-url: "not a url" is not a URL/);
    expect(() => loadConfig({ PIPELINE_ORCHESTRATOR_DLQ_URL: 'amqp://localhost/dlq' })).toThrow(/needs a postgres:\/\/ URL/);
  });

  it('rejects other modes, negative retry limits, bad prefixes and unknown keys', () => {
    expect(() => loadConfig({ PIPELINE_ORCHESTRATOR_MODE: 'SYNC' })).toThrow(/pipeline\.orchestrator\.mode must be QUEUE_ASYNC/);
    expect(() => loadConfig({ PIPELINE_DEFAULTS_RETRY_LIMIT: '-1' })).toThrow(/pipeline\.defaults\.retry-limit/);
    expect(() => loadConfig({ PIPELINE_DEFAULTS_RETRY_LIMIT: 'five' })).toThrow(/pipeline\.defaults\.retry-limit/);
    expect(() => loadConfig({ PIPELINE_ADMIN_PREFIX: 'a/b' })).toThrow(/pipeline\.admin\.prefix/);
    expect(() => loadConfig({}, { 'pipeline.nope': 1 } as never)).toThrow(/unknown configuration key\(s\): pipeline\.nope/);
  });

  it('rejects a token list that is not the expected shape', () => {
    expect(() => loadConfig({ PIPELINE_AUTH_TOKENS: '[{"sha256":"abc","role":"admin"}]' })).toThrow(/pipeline\.auth\.tokens/);
  });

  it('reads the role and the shutdown grace period, and names the key of a bad role', () => {
    expect(loadConfig({})).toMatchObject({ 'pipeline.role': 'all', 'pipeline.shutdown.grace-period': 30_000, 'pipeline.temporal.call-timeout': 5000 });
    expect(loadConfig({ PIPELINE_ROLE: 'worker', PIPELINE_SHUTDOWN_GRACE_PERIOD: '10s' })).toMatchObject({
      'pipeline.role': 'worker',
      'pipeline.shutdown.grace-period': 10_000,
    });
    expect(() => loadConfig({ PIPELINE_ROLE: 'scheduler' })).toThrow(/pipeline\.role must be one of all, api, worker/);
  });

  it('takes the Temporal address and namespace from the temporal CLI profile unless set here', () => {
    const dir = mkdtempSync(join(tmpdir(), 'envconfig-'));
    const file = join(dir, 'temporal.toml');
    writeFileSync(file, '[profile.default]\naddress = "profile-host:7233"\nnamespace = "from-profile"\n\n[profile.other]\naddress = "other:7233"\n');
    expect(loadConfig({ TEMPORAL_CONFIG_FILE: file })).toMatchObject({
      'pipeline.temporal.address': 'profile-host:7233',
      'pipeline.temporal.namespace': 'from-profile',
    });
    expect(loadConfig({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'other' })).toMatchObject({
      'pipeline.temporal.address': 'other:7233',
      'pipeline.temporal.namespace': 'default',
    });
    expect(loadConfig({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_ADDRESS: 'env:7233', PIPELINE_TEMPORAL_NAMESPACE: 'mine' })).toMatchObject({
      'pipeline.temporal.address': 'env:7233',
      'pipeline.temporal.namespace': 'mine',
    });
    expect(() => loadConfig({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'missing' })).toThrow(
      /TEMPORAL_CONFIG_FILE \/ TEMPORAL_PROFILE: .*Profile 'missing' not found/,
    );
  });

  it('reads retention keys, and refuses an audit shorter than the DLQ or dedupe rows shorter than a redelivery can arrive', () => {
    expect(loadConfig({ PIPELINE_RETENTION_REJECTS: '3d' })['pipeline.retention.rejects']).toBe(3 * 86_400_000);
    expect(loadConfig({})['pipeline.retention.duty-cycle']).toBe(0.5);
    expect(loadConfig({ PIPELINE_RETENTION_DUTY_CYCLE: '0.8' })['pipeline.retention.duty-cycle']).toBe(0.8);
    expect(() => loadConfig({ PIPELINE_RETENTION_DUTY_CYCLE: '0' })).toThrow(/pipeline\.retention\.duty-cycle/);
    expect(() => loadConfig({ PIPELINE_RETENTION_DUTY_CYCLE: '1.5' })).toThrow(/pipeline\.retention\.duty-cycle/);
    expect(() => loadConfig({ PIPELINE_RETENTION_DUTY_CYCLE: 'half' })).toThrow(/pipeline\.retention\.duty-cycle/);
    expect(() => loadConfig({ PIPELINE_RETENTION_DLQ: '400d' })).toThrow(/pipeline\.retention\.redrive-audit must be at least pipeline\.retention\.dlq/);
    expect(() => loadConfig({ PIPELINE_RETENTION_DEDUPE: '10m' })).toThrow(/pipeline\.retention\.dedupe must be at least 10240 s/);
    expect(
      loadConfig({
        PIPELINE_RETENTION_DEDUPE: '10m',
        PIPELINE_DEFAULTS_RETRY_LIMIT: '0',
        PIPELINE_ORCHESTRATOR_WORKER_STEP_TIMEOUT: '5s',
        PIPELINE_DEFAULTS_MAX_BACKOFF: '1000',
        PIPELINE_ORCHESTRATOR_WORKER_IN_PROGRESS_BUDGET: '10s',
      })['pipeline.retention.dedupe'],
    ).toBe(600_000);
  });

  it('reads payload codec keys and the tracing endpoint, naming the key of a bad value', () => {
    const key = Buffer.alloc(32, 7).toString('base64');
    expect(
      loadConfig({
        PIPELINE_CODEC_KEYS: JSON.stringify([
          { id: 'k2', key },
          { id: 'k1', key },
        ]),
        PIPELINE_CODEC_CORS_ORIGINS: 'http://localhost:8233, https://ui.example',
      }),
    ).toMatchObject({
      'pipeline.codec.keys': [
        { id: 'k2', key },
        { id: 'k1', key },
      ],
      'pipeline.codec.cors-origins': ['http://localhost:8233', 'https://ui.example'],
    });
    expect(loadConfig({})['pipeline.codec.keys']).toEqual([]);
    expect(() => loadConfig({ PIPELINE_CODEC_KEYS: JSON.stringify([{ id: 'k1', key: 'c2hvcnQ=' }]) })).toThrow(
      /pipeline\.codec\.keys must be .*key must be 32 bytes in base64/,
    );
    expect(() =>
      loadConfig({
        PIPELINE_CODEC_KEYS: JSON.stringify([
          { id: 'k1', key },
          { id: 'k1', key },
        ]),
      }),
    ).toThrow(/pipeline\.codec\.keys .*key ids must be unique/);
    expect(() => loadConfig({ PIPELINE_CODEC_KEYS: 'not json' })).toThrow(/pipeline\.codec\.keys must be a JSON array/);
    expect(loadConfig({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' })['pipeline.tracing.otlp-endpoint']).toBe(
      'http://collector:4318/v1/traces',
    );
    expect(() => loadConfig({ PIPELINE_TRACING_OTLP_ENDPOINT: 'collector' })).toThrow(/pipeline\.tracing\.otlp-endpoint: must be a URL/);
  });
});

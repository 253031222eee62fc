/**
 * The sqs and rabbitmq DLQ providers against real brokers: moto's SQS server on
 * loopback (started here) and the RabbitMQ broker on 127.0.0.1:5672. One message per
 * envelope, a repeated publish adds none, a dropped connection mid-publish is retried
 * with nothing lost, and the backlog is read without consuming.
 */
import { randomBytes } from 'node:crypto';
import { CreateQueueCommand, SQSClient } from '@aws-sdk/client-sqs';
import amqp from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envelopeDedupeId } from '../../src/dlq/provider';
import { definePipeline, localStep, NonRetryableException } from '../../src/pipeline/define';
import type { DlqEnvelope } from '../../src/store/dlq-store';
import { startTestEngine, type TestEngine } from '../helpers/engine';
import { startMoto, type Moto } from '../helpers/moto';
import { until } from '../helpers/until';
import { scaled } from '../helpers/time-scale';

const failing = definePipeline({
  name: 'fails',
  steps: [
    localStep('x', () => {
      throw new NonRetryableException('bad input', 'BAD_INPUT');
    }),
  ],
});

async function failOne(engine: TestEngine, executionId: string): Promise<DlqEnvelope> {
  await engine.start('acme', { pipeline: 'fails', executionId });
  await engine.waitFor('acme', executionId, ['FAILED']);
  return (await engine.dlq.list('acme', { limit: 50 })).entries.find((e) => e.envelope.executionId === executionId)!.envelope;
}

describe('sqs provider (moto)', () => {
  let moto: Moto;
  let engine: TestEngine;
  beforeAll(async () => {
    Object.assign(process.env, {
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
      AWS_REGION: 'us-east-1',
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    });
    moto = await startMoto();
    const sqs = new SQSClient({ endpoint: moto.endpoint, region: 'us-east-1' });
    const { QueueUrl } = await sqs.send(
      new CreateQueueCommand({ QueueName: `pipeline-dlq-${randomBytes(3).toString('hex')}.fifo`, Attributes: { FifoQueue: 'true' } }),
    );
    sqs.destroy();
    engine = await startTestEngine([failing], { 'pipeline.orchestrator.dlq-provider': 'sqs', 'pipeline.orchestrator.dlq-url': QueueUrl! });
  }, scaled(60_000));
  afterAll(async () => {
    await engine?.stop();
    await moto?.stop();
  });

  it('lands one message per envelope, and a repeated publish adds none', async () => {
    const relay = engine.service.relay!;
    const envelope = await failOne(engine, 'sqs-1');
    await until(async () => (await relay.unpublished()) === 0, 20_000, 'the relay to publish');
    expect(await relay.provider.backlog()).toBe(1);
    // The same envelope again: the broker deduplicates by the id from its transition identity.
    await relay.provider.publish(envelope, envelopeDedupeId('acme', envelope.transitionKey));
    expect(await relay.provider.backlog()).toBe(1);
    expect(await relay.publishPending()).toBe(0);
    await failOne(engine, 'sqs-2');
    await until(async () => (await relay.unpublished()) === 0, 20_000, 'the second publish');
    expect(await relay.provider.backlog()).toBe(2);
    const metrics = await (await engine.service.app.request('/metrics')).text();
    expect(metrics).toContain('pipeline_execution_dlq_backlog 2');
    expect(metrics).toContain('pipeline_execution_dlq_unpublished 0');
  });
});

describe('rabbitmq provider', () => {
  const queue = `pipeline-test-dlq-${randomBytes(4).toString('hex')}`;
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine([failing], {
      'pipeline.orchestrator.dlq-provider': 'rabbitmq',
      'pipeline.orchestrator.dlq-url': `amqp://guest:guest@127.0.0.1:5672/%2F?queue=${queue}`,
    });
  });
  afterAll(async () => {
    await engine?.stop();
    // Test hygiene only: the product never deletes from the DLQ.
    const connection = await amqp.connect('amqp://guest:guest@127.0.0.1:5672');
    const channel = await connection.createChannel();
    await channel.deleteQueue(queue);
    await connection.close();
  });

  it('retries a publish whose connection dropped, losing and duplicating nothing', { timeout: scaled(60_000) }, async () => {
    const relay = engine.service.relay!;
    let dropped = 0;
    relay.beforePublish = async () => {
      if (dropped++ > 0) return;
      // Drop the live broker connection under the publish: the TCP socket goes away.
      const session = await (relay.provider as any).open();
      session.connection.connection.stream.destroy();
    };
    await failOne(engine, 'rmq-1');
    await failOne(engine, 'rmq-2');
    await until(async () => (await relay.unpublished()) === 0, 45_000, 'every envelope confirmed');
    expect(dropped).toBeGreaterThanOrEqual(2);
    expect(engine.logs.some((l) => l.event === 'execution_dlq_publish_failed' && l.provider === 'rabbitmq')).toBe(true);
    expect(await relay.provider.backlog()).toBe(2);
    expect(await relay.publishPending()).toBe(0);
    expect(await relay.provider.backlog()).toBe(2);
  });
});

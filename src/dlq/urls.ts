/**
 * The broker DLQ providers' URL grammar, apart from the providers themselves so that
 * validating configuration loads neither amqplib nor the AWS SDK. Each parser throws a
 * ConfigError naming `pipeline.orchestrator.dlq-url`.
 */
import { ConfigError } from '../errors';

/** `amqp(s)://user:pass@host:5672/vhost?queue=name`: the URL to connect with and the queue (default `pipeline.execution-dlq`). */
export function parseAmqpUrl(raw: string): { connectUrl: string; queue: string } {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(
      `pipeline.orchestrator.dlq-url: "${raw}" is not a URL; provider rabbitmq expects amqp://user:pass@host:5672/vhost?queue=pipeline.execution-dlq`,
    );
  }
  if (!['amqp:', 'amqps:'].includes(url.protocol))
    throw new ConfigError(`pipeline.orchestrator.dlq-url: provider rabbitmq needs an amqp:// or amqps:// URL, got ${url.protocol}//…`);
  const queue = url.searchParams.get('queue') ?? 'pipeline.execution-dlq';
  if (!/^[A-Za-z0-9._:-]{1,255}$/.test(queue))
    throw new ConfigError(`pipeline.orchestrator.dlq-url: queue "${queue}" must be 1–255 characters of [A-Za-z0-9._:-]`);
  url.searchParams.delete('queue');
  return { connectUrl: url.toString(), queue };
}

/**
 * An SQS FIFO queue URL `http(s)://host/<account>/<queue>.fifo`: its origin is the endpoint;
 * the region comes from an AWS host name, else AWS_REGION, else us-east-1.
 */
export function parseSqsUrl(raw: string): { endpoint: string; queueUrl: string; region: string } {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(
      `pipeline.orchestrator.dlq-url: "${raw}" is not a URL; provider sqs expects the queue URL, e.g. https://sqs.eu-west-1.amazonaws.com/123456789012/pipeline-dlq.fifo`,
    );
  }
  if (!['http:', 'https:'].includes(url.protocol) || !/^\/[^/]+\/[^/]+\.fifo$/.test(url.pathname)) {
    throw new ConfigError(
      'pipeline.orchestrator.dlq-url: provider sqs expects a FIFO queue URL http(s)://host/<account>/<queue>.fifo (FIFO for broker-side deduplication)',
    );
  }
  const region = /^sqs\.([a-z0-9-]+)\.amazonaws\.com$/.exec(url.hostname)?.[1] ?? process.env.AWS_REGION ?? 'us-east-1';
  return { endpoint: url.origin, queueUrl: url.toString(), region };
}

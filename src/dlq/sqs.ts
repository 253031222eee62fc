/**
 * The `sqs` DLQ provider: a FIFO queue, so the broker itself drops a second publish of
 * the same envelope (MessageDeduplicationId from the transition identity, 5-minute
 * window). The queue URL's origin is the endpoint (AWS or any SQS-compatible server);
 * the region comes from the AWS host name, else AWS_REGION, else us-east-1; credentials
 * from the AWS default chain (environment, profile, role).
 */
import { GetQueueAttributesCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { ConfigError } from '../errors';
import type { DlqEnvelope } from '../store/dlq-store';
import type { DlqProvider } from './provider';

export function parseSqsUrl(raw: string): { endpoint: string; queueUrl: string; region: string } {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`pipeline.orchestrator.dlq-url: "${raw}" is not a URL; provider sqs expects the queue URL, e.g. https://sqs.eu-west-1.amazonaws.com/123456789012/pipeline-dlq.fifo`);
  }
  if (!['http:', 'https:'].includes(url.protocol) || !/^\/[^/]+\/[^/]+\.fifo$/.test(url.pathname)) {
    throw new ConfigError('pipeline.orchestrator.dlq-url: provider sqs expects a FIFO queue URL http(s)://host/<account>/<queue>.fifo (FIFO for broker-side deduplication)');
  }
  const region = /^sqs\.([a-z0-9-]+)\.amazonaws\.com$/.exec(url.hostname)?.[1] ?? process.env.AWS_REGION ?? 'us-east-1';
  return { endpoint: url.origin, queueUrl: url.toString(), region };
}

export class SqsDlq implements DlqProvider {
  readonly name = 'sqs' as const;
  readonly location: string;
  private readonly client: SQSClient;
  private readonly queueUrl: string;

  constructor(raw: string) {
    const { endpoint, queueUrl, region } = parseSqsUrl(raw);
    this.client = new SQSClient({ endpoint, region });
    this.queueUrl = queueUrl;
    this.location = queueUrl;
  }

  async publish(envelope: DlqEnvelope, dedupeId: string): Promise<void> {
    await this.client.send(new SendMessageCommand({
      QueueUrl: this.queueUrl,
      MessageBody: JSON.stringify(envelope),
      MessageGroupId: envelope.tenantId,
      MessageDeduplicationId: dedupeId,
      MessageAttributes: {
        terminalReason: { DataType: 'String', StringValue: envelope.terminalReason },
        errorCode: { DataType: 'String', StringValue: envelope.errorCode },
      },
    }));
  }

  async backlog(): Promise<number> {
    const result = await this.client.send(new GetQueueAttributesCommand({ QueueUrl: this.queueUrl, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }));
    return Number(result.Attributes?.ApproximateNumberOfMessages ?? 0) + Number(result.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0);
  }

  async close(): Promise<void> {
    this.client.destroy();
  }
}

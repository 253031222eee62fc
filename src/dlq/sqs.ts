/**
 * The `sqs` DLQ provider: a FIFO queue, so the broker itself drops a second publish of
 * the same envelope (MessageDeduplicationId from the transition identity, 5-minute
 * window). The queue URL's origin is the endpoint (AWS or any SQS-compatible server);
 * the region comes from the AWS host name, else AWS_REGION, else us-east-1; credentials
 * from the AWS default chain (environment, profile, role).
 */
import { GetQueueAttributesCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { DlqEnvelope } from '../store/dlq-store';
import type { DlqProvider } from './provider';
import { parseSqsUrl } from './urls';

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
    await this.client.send(
      new SendMessageCommand({
        QueueUrl: this.queueUrl,
        MessageBody: JSON.stringify(envelope),
        MessageGroupId: envelope.tenantId,
        MessageDeduplicationId: dedupeId,
        MessageAttributes: {
          terminalReason: { DataType: 'String', StringValue: envelope.terminalReason },
          errorCode: { DataType: 'String', StringValue: envelope.errorCode },
        },
      }),
    );
  }

  async backlog(): Promise<number> {
    const result = await this.client.send(
      new GetQueueAttributesCommand({ QueueUrl: this.queueUrl, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }),
    );
    return Number(result.Attributes?.ApproximateNumberOfMessages ?? 0) + Number(result.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0);
  }

  async close(): Promise<void> {
    this.client.destroy();
  }
}

/**
 * The `rabbitmq` DLQ provider: a durable queue, persistent messages and publisher
 * confirms; an envelope counts as written only once the broker confirmed it. The
 * message id is the envelope's dedupe id. A dropped connection fails the publish (the
 * relay retries it) and is reopened on the next one.
 */
import amqp, { type ChannelModel, type ConfirmChannel } from 'amqplib';
import type { DlqEnvelope } from '../store/dlq-store';
import { redactUrl, type DlqProvider } from './provider';
import { parseAmqpUrl } from './urls';

/** A publish (until the broker confirms) or a queue check may take at most this long. */
const OPERATION_TIMEOUT_MS = 5_000;

export class RabbitMqDlq implements DlqProvider {
  readonly name = 'rabbitmq' as const;
  readonly location: string;
  private readonly connectUrl: string;
  readonly queue: string;
  private session?: Promise<{ connection: ChannelModel; channel: ConfirmChannel }>;

  constructor(raw: string) {
    const { connectUrl, queue } = parseAmqpUrl(raw);
    this.connectUrl = connectUrl;
    this.queue = queue;
    this.location = `${redactUrl(connectUrl)} queue ${queue}`;
  }

  private open() {
    this.session ??= (async () => {
      const connection = await amqp.connect(this.connectUrl, { clientProperties: { connection_name: 'pipeline-dlq' } });
      const reset = () => {
        this.session = undefined;
      };
      connection.on('close', reset);
      connection.on('error', reset);
      const channel = await connection.createConfirmChannel();
      channel.on('error', reset);
      channel.on('close', reset);
      await channel.assertQueue(this.queue, { durable: true });
      return { connection, channel };
    })().catch((err) => {
      this.session = undefined;
      throw err;
    });
    return this.session;
  }

  /**
   * Runs `operation` on the open session under a timeout. Any failure discards the
   * session (a dead socket does not always say so), so the next call reconnects.
   */
  private async withSession<T>(operation: (channel: ConfirmChannel) => Promise<T>): Promise<T> {
    const session = this.open();
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        session.then(({ channel }) => operation(channel)),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`rabbitmq did not answer within ${OPERATION_TIMEOUT_MS} ms`)), OPERATION_TIMEOUT_MS);
        }),
      ]);
    } catch (err) {
      if (this.session === session) this.session = undefined;
      void session.then(({ connection }) => connection.close()).catch(() => undefined);
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  publish(envelope: DlqEnvelope, dedupeId: string): Promise<void> {
    return this.withSession(
      (channel) =>
        new Promise<void>((resolve, reject) => {
          channel.sendToQueue(
            this.queue,
            Buffer.from(JSON.stringify(envelope)),
            {
              persistent: true,
              contentType: 'application/json',
              messageId: dedupeId,
              headers: { terminalReason: envelope.terminalReason, errorCode: envelope.errorCode },
            },
            (err) => (err ? reject(err) : resolve()),
          );
        }),
    );
  }

  async backlog(): Promise<number> {
    return this.withSession(async (channel) => (await channel.checkQueue(this.queue)).messageCount);
  }

  async close(): Promise<void> {
    const session = this.session;
    this.session = undefined;
    if (session) await (await session.catch(() => undefined))?.connection.close().catch(() => undefined);
  }
}

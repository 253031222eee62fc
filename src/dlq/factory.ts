/** Builds the configured DLQ provider; `postgres` needs no broker and returns null. */
import type { Config } from '../config/config';
import type { DlqProvider } from './provider';
import { RabbitMqDlq } from './rabbitmq';
import { SqsDlq } from './sqs';

export function createDlqProvider(config: Config): DlqProvider | null {
  const url = config['pipeline.orchestrator.dlq-url'];
  switch (config['pipeline.orchestrator.dlq-provider']) {
    case 'sqs':
      return new SqsDlq(url!);
    case 'rabbitmq':
      return new RabbitMqDlq(url!);
    default:
      return null;
  }
}

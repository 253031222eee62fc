/** Builds the configured DLQ provider; `postgres` needs no broker and returns null. */
import type { Config } from '../config/config';
import type { Log } from '../log';
import type { DlqProvider } from './provider';
import { RabbitMqDlq } from './rabbitmq';
import { SqsDlq } from './sqs';

export function createDlqProvider(config: Config, log?: Log): DlqProvider | null {
  const url = config['pipeline.orchestrator.dlq-url'];
  switch (config['pipeline.orchestrator.dlq-provider']) {
    case 'sqs':
      // The AWS SDK would print its Node-version notice to stderr as plain text; say it once as a log line instead.
      if (Number(process.versions.node.split('.')[0]) < 22 && process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED === undefined) {
        process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
        log?.warn({
          event: 'aws_sdk_node_version_support',
          node: process.versions.node,
          detail: 'AWS SDK for JavaScript v3 releases after early January 2027 require Node >= 22',
        });
      }
      return new SqsDlq(url!);
    case 'rabbitmq':
      return new RabbitMqDlq(url!);
    default:
      return null;
  }
}

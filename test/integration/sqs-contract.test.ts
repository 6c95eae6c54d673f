import { isUtf8 } from 'node:buffer';
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  SQSClient,
  SendMessageCommand,
  type MessageAttributeValue,
} from '@aws-sdk/client-sqs';
import { afterAll } from 'vitest';
import { createSqsAdapter } from '../../core/adapters/sqs';
import { runAdapterContract, type ContractHarness } from './adapter-contract';
import { SQS_ENDPOINT, SQS_REGION, SQS_TEST_CREDENTIALS, uniqueName } from './env';
import { freePort as closedPort } from './fixtures/free-port';

/**
 * The shared adapter contract against fauxqs (the faithful emulator), once for standard queues and
 * once for FIFO queues. The harness creates queues and counts messages with the AWS SDK directly.
 *
 * SQS bodies are Unicode text: bytes that are not valid UTF-8 (or contain characters SQS rejects,
 * such as U+0000) cannot be sent as they are, so the harness sends them base64-encoded — what an SQS
 * producer has to do. The adapter returns them as that base64 text (`encoding: 'utf8'`).
 */

const native = new SQSClient({ region: SQS_REGION, endpoint: SQS_ENDPOINT, credentials: SQS_TEST_CREDENTIALS });
afterAll(() => native.destroy());

/** Characters the SQS API accepts in a body (SendMessage, "MessageBody"). */
const SQS_BODY_OK = /^[\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]*$/u;

function sqsBodyText(bytes: Uint8Array): string {
  const buf = Buffer.from(bytes);
  if (isUtf8(buf)) {
    const text = buf.toString('utf8');
    if (SQS_BODY_OK.test(text)) return text;
  }
  return buf.toString('base64');
}

async function queueUrl(name: string): Promise<string> {
  return (await native.send(new GetQueueUrlCommand({ QueueName: name }))).QueueUrl!;
}

function harness(fifo: boolean): ContractHarness {
  return {
    name: fifo ? 'sqs-fifo (fauxqs)' : 'sqs-standard (fauxqs)',
    createAdapter: () => Promise.resolve(createSqsAdapter({ kind: 'sqs', region: SQS_REGION, endpoint: SQS_ENDPOINT, ...SQS_TEST_CREDENTIALS })),
    async createQueueWithMessages(bodies, headers) {
      const name = fifo ? `${uniqueName('fifo')}.fifo` : uniqueName('std');
      const created = await native.send(
        new CreateQueueCommand({ QueueName: name, Attributes: { MaximumMessageSize: '1048576', ...(fifo ? { FifoQueue: 'true' } : {}) } }),
      );
      const url = created.QueueUrl!;
      const attrs: Record<string, MessageAttributeValue> = {};
      for (const [k, v] of Object.entries(headers ?? {})) attrs[k] = { DataType: 'String', StringValue: v };
      // One at a time, so the order of arrival is the given order.
      for (const [i, b] of bodies.entries()) {
        await native.send(
          new SendMessageCommand({
            QueueUrl: url,
            MessageBody: sqsBodyText(b),
            ...(Object.keys(attrs).length > 0 ? { MessageAttributes: attrs } : {}),
            // fauxqs returns one message per group per receive (AWS: up to 10), so each message gets
            // its own group; groups are served in creation order.
            ...(fifo ? { MessageGroupId: `g${i}`, MessageDeduplicationId: `d${i}` } : {}),
          }),
        );
      }
      return { queueId: `sqs:${url}`, name };
    },
    async countMessages(name) {
      const a = (await native.send(new GetQueueAttributesCommand({ QueueUrl: await queueUrl(name), AttributeNames: ['All'] }))).Attributes ?? {};
      return Number(a.ApproximateNumberOfMessages ?? 0) + Number(a.ApproximateNumberOfMessagesNotVisible ?? 0) + Number(a.ApproximateNumberOfMessagesDelayed ?? 0);
    },
    async deleteQueue(name) {
      await native.send(new DeleteQueueCommand({ QueueUrl: await queueUrl(name) }));
    },
    peekOptions: { acceptSideEffects: true },
    supportsHeaders: true,
    bodiesAreText: true,
    async createUnreachableAdapter() {
      const port = await closedPort();
      return createSqsAdapter({ kind: 'sqs', region: SQS_REGION, endpoint: `http://127.0.0.1:${port}`, ...SQS_TEST_CREDENTIALS });
    },
  };
}

runAdapterContract(harness(false));
runAdapterContract(harness(true));

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../core/cli/main';
import type { PeekPage } from '../../shared/domain';
import type { RedrivePlan } from '../../shared/redrive/types';
import { SQS_ALT_ENDPOINT, SQS_ENDPOINT, SQS_REGION, SQS_TEST_CREDENTIALS, uniqueName } from './env';
import { sqsResources } from './fixtures/sqs-resources';

/**
 * A plain SQS queue URL as the queue argument (fresh-user pass: only `sqs:<URL>` was accepted; the
 * plain URL gave "No queue named or with id …", exit 4, or — alone — "not a connection", exit 2).
 * The emulators' own form: `http://127.0.0.1:PORT/<account>/<name>` (fauxqs's QueueUrl says
 * `http://sqs.us-east-1.127.0.0.1:4566/…`, which the WHATWG URL parser refuses: it is read with its region
 * from the host and 127.0.0.1 as the endpoint, since users copy it from `aws sqs list-queues` or `queues --json`).
 */

const { client, createQueue } = sqsResources();
let dir: string;

async function cli(argv: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  // The SDK's credential chain reads process.env, not the CLI's io.env.
  process.env.AWS_ACCESS_KEY_ID ??= SQS_TEST_CREDENTIALS.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY ??= SQS_TEST_CREDENTIALS.secretAccessKey;
  let stdout = '';
  let stderr = '';
  const code = await main(argv, { stdout: { write: (x: string) => (stdout += x) }, stderr: { write: (x: string) => (stderr += x) }, cwd: dir, env: { QUEUESCOPE_HOME: join(dir, 'home'), ...env } });
  return { code, stdout, stderr };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qs-sqs-url-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe.each([
  { label: 'fauxqs', endpoint: SQS_ENDPOINT },
  { label: 'local-aws-sqs', endpoint: SQS_ALT_ENDPOINT },
])('a plain SQS queue URL as the queue argument ($label)', ({ endpoint }) => {
  const c = client(endpoint);

  it('peek and redrive --dry-run take the URL after a connection, and alone (region from AWS_REGION); the DLQ resolves to its listed id, so its source is found', async () => {
    const base = uniqueName('qurl');
    const dlq = await createQueue(c, `${base}-dlq`);
    const src = await createQueue(c, base, { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 3 }) });
    await c.send(new SendMessageCommand({ QueueUrl: dlq.url, MessageBody: 'dead letter 1' }));
    const account = dlq.url.split('/').at(-2) ?? '';
    const plain = `${endpoint}/${account}/${dlq.name}`;
    const conn = `sqs://${SQS_REGION}?endpoint=${endpoint}`;

    const peek = await cli(['peek', conn, plain, '--json']);
    expect(peek.code).toBe(0);
    expect((JSON.parse(peek.stdout) as PeekPage).messages.map((m) => m.body.data)).toEqual(['dead letter 1']);

    const alone = await cli(['peek', plain, '--json'], { AWS_REGION: SQS_REGION });
    expect(alone.code).toBe(0);
    expect((JSON.parse(alone.stdout) as PeekPage).messages.map((m) => m.body.data)).toEqual(['dead letter 1']);

    const dry = await cli(['redrive', plain, '--dry-run', '--json'], { AWS_REGION: SQS_REGION });
    expect(dry.code).toBe(0);
    const plan = JSON.parse(dry.stdout) as RedrivePlan;
    expect(plan.dlq.name).toBe(dlq.name);
    expect(plan.targets.map((t) => [t.queueName, t.count])).toEqual([[src.name, 1]]);

    // --to takes a plain URL as well.
    const to = await cli(['redrive', conn, plain, '--to', `${endpoint}/${account}/${src.name}`, '--dry-run', '--json']);
    expect(to.code).toBe(0);
    expect((JSON.parse(to.stdout) as RedrivePlan).targets.map((t) => [t.queueName, t.count])).toEqual([[src.name, 1]]);
  });

  it('the URL the endpoint itself returns (CreateQueue, ListQueues, `queues --json`) works too: fauxqs\'s http://sqs.<region>.127.0.0.1:PORT/… after a connection and alone (region from its host)', async () => {
    // fresh-clone pass: fauxqs's own QueueUrl failed with "No queue named or with id …" (exit 4),
    // alone with "does not say its region" (exit 2): the URL parser refuses a host ending in a number.
    const base = uniqueName('qurl-own');
    const dlq = await createQueue(c, `${base}-dlq`);
    const src = await createQueue(c, base, { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 3 }) });
    await c.send(new SendMessageCommand({ QueueUrl: dlq.url, MessageBody: 'dead letter own' }));
    const conn = `sqs://${SQS_REGION}?endpoint=${endpoint}`;

    const peek = await cli(['peek', conn, dlq.url, '--json']);
    expect(peek.code).toBe(0);
    expect((JSON.parse(peek.stdout) as PeekPage).messages.map((m) => m.body.data)).toEqual(['dead letter own']);

    const to = await cli(['redrive', conn, dlq.url, '--to', src.url, '--dry-run', '--json']);
    expect(to.code).toBe(0);
    expect((JSON.parse(to.stdout) as RedrivePlan).targets.map((t) => [t.queueName, t.count])).toEqual([[src.name, 1]]);

    if (/^https?:\/\/sqs\.[a-z0-9-]+\.\d+\.\d+\.\d+\.\d+[:/]/.test(dlq.url)) {
      const alone = await cli(['redrive', dlq.url, '--dry-run', '--json']);
      expect(alone.code).toBe(0);
      expect((JSON.parse(alone.stdout) as RedrivePlan).targets.map((t) => [t.queueName, t.count])).toEqual([[src.name, 1]]);
    }
  });

  it('a URL of another server or region than the connection is refused (exit 2), not resolved to the namesake on the connection', async () => {
    // fresh-clone pass: `peek <conn> https://sqs.eu-west-1.amazonaws.com/…/<name>` (or another emulator's URL)
    // read the connection's queue of that name — a redrive with --yes would have moved it.
    const dlq = await createQueue(c, uniqueName('qurl-other-dlq'));
    const dst = await createQueue(c, uniqueName('qurl-other-dst'));
    await c.send(new SendMessageCommand({ QueueUrl: dlq.url, MessageBody: 'stays put' }));
    const conn = `sqs://${SQS_REGION}?endpoint=${endpoint}`;
    const account = dlq.url.split('/').at(-2) ?? '';
    const elsewhere = `http://127.0.0.1:${String(Number(new URL(endpoint).port) + 1)}/${account}/${dlq.name}`;
    const aws = `https://sqs.eu-west-1.amazonaws.com/${account}/${dlq.name}`;
    for (const argv of [
      ['peek', conn, elsewhere, '--accept-side-effects'],
      ['peek', conn, aws, '--accept-side-effects'],
      ['redrive', conn, aws, '--to', dst.name, '--yes'],
      ['redrive', conn, dlq.name, '--to', `http://127.0.0.1:${String(Number(new URL(endpoint).port) + 1)}/${account}/${dst.name}`, '--yes'],
    ]) {
      const r = await cli(argv);
      expect(r.code, `${argv.join(' ')}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(/is not on this connection: it (names|is an AWS queue URL)/);
    }
    // Nothing was received or moved: the message is still in the DLQ, never received.
    const left = await c.send(new ReceiveMessageCommand({ QueueUrl: dlq.url, MaxNumberOfMessages: 10, MessageSystemAttributeNames: ['ApproximateReceiveCount'] }));
    expect((left.Messages ?? []).map((m) => m.Body)).toEqual(['stays put']);
    // fauxqs reports the count (local-aws-sqs does not return it here): this receive is the first.
    for (const m of left.Messages ?? []) if (m.Attributes?.ApproximateReceiveCount !== undefined) expect(m.Attributes.ApproximateReceiveCount).toBe('1');
  });

  it('alone without a region: a usage error that says exactly what to type', async () => {
    const plain = `${endpoint}/000000000000/${uniqueName('qurl-none')}`;
    const r = await cli(['peek', plain]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`does not say its region (only AWS hosts do): set AWS_REGION, or give the connection before it, e.g. 'sqs://us-east-1?endpoint=${endpoint}' ${plain}`);
  });

  it('a URL of a queue that does not exist: queue not found (exit 4)', async () => {
    const r = await cli(['peek', `sqs://${SQS_REGION}?endpoint=${endpoint}`, `${endpoint}/000000000000/${uniqueName('qurl-missing')}`, '--accept-side-effects']);
    expect(r.code).toBe(4);
  });
});

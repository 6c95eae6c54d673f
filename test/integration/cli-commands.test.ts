import { access, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CreateQueueCommand, DeleteQueueCommand, SQSClient, SendMessageCommand } from '@aws-sdk/client-sqs';
import amqp from 'amqplib';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main, type CliIo } from '../../core/cli/main';
import { ProfileStore } from '../../core/services/profile-store';
import type { PeekPage, QueueSummary } from '../../shared/domain';
import { AMQP_URL, RABBITMQ_MANAGEMENT_URL, REDIS_URL, SQS_ENDPOINT, SQS_REGION, SQS_TEST_CREDENTIALS, uniqueName } from './env';

/** Runs the CLI in-process (`main(argv, io)`) against the real brokers and snapshot files. */
interface Run {
  code: number;
  stdout: string;
  stderr: string;
}
async function run(argv: string[], opts: { env?: Record<string, string>; signal?: AbortSignal; onStderr?: (s: string) => void; cwd?: string } = {}): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const io: CliIo = {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: {
      write: (s: string) => {
        stderr += s;
        opts.onStderr?.(s);
      },
    },
    env: { QUEUESCOPE_HOME: home, ...opts.env },
    ...(opts.signal !== undefined ? { signal: opts.signal } : {}),
    cwd: opts.cwd ?? dir,
  };
  const code = await main(argv, io);
  return { code, stdout, stderr };
}
// eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- a typed view of the CLI's JSON output
const json = <T>(r: Run): T => JSON.parse(r.stdout) as T;
const exists = (p: string) => access(p).then(() => true, () => false);
const RAW_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

const fixture = fileURLToPath(new URL('../fixtures/snapshots/two-queues.jsonl', import.meta.url));
let dir: string;
let home: string;
const redis = new Redis(REDIS_URL);
const stream = uniqueName('cli-stream');
const big = uniqueName('cli-big');
const twin = uniqueName('cli-twin');
let bull: Queue;
let conn: amqp.ChannelModel;
let ch: amqp.Channel;
const quorum = uniqueName('cli-quorum');
const sqs = new SQSClient({ region: SQS_REGION, endpoint: SQS_ENDPOINT, credentials: { ...SQS_TEST_CREDENTIALS } });
const sqsName = uniqueName('cli-sqs');
let sqsUrl = '';

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qs-cli-'));
  home = join(dir, 'home');
  await redis.xadd(stream, '*', 'body', JSON.stringify({ orderId: 'A-1001', operation: 'charge' }), 'Idempotency-Key', 'A-1001:charge');
  await redis.xadd(stream, '*', 'body', 'evil\u001b]0;pwned\u0007\u001b[2J\u009b31m\u202etxt\r\nline2');
  for (let i = 0; i < 3; i++) await redis.xadd(stream, '*', 'body', `plain ${i}`);
  const pipe = redis.pipeline();
  for (let i = 0; i < 20_000; i++) pipe.xadd(big, '*', 'body', `m${i}`);
  await pipe.exec();
  await redis.rpush(twin, 'a list item');
  bull = new Queue(twin, { connection: { url: REDIS_URL } });
  await bull.add('job', { x: 1 });
  conn = await amqp.connect(AMQP_URL, { noDelay: true });
  ch = await conn.createChannel();
  await ch.assertQueue(quorum, { durable: true, arguments: { 'x-queue-type': 'quorum', 'x-delivery-limit': 3 } });
  ch.sendToQueue(quorum, Buffer.from('hello'), { messageId: 'q-1' });
  await ch.checkQueue(quorum);
  process.env.AWS_ACCESS_KEY_ID ??= SQS_TEST_CREDENTIALS.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY ??= SQS_TEST_CREDENTIALS.secretAccessKey;
  sqsUrl = (await sqs.send(new CreateQueueCommand({ QueueName: sqsName }))).QueueUrl!;
  await sqs.send(new SendMessageCommand({ QueueUrl: sqsUrl, MessageBody: 'sqs body' }));
});

afterAll(async () => {
  await redis.del(stream, big, twin);
  await bull.obliterate({ force: true }).catch(() => undefined);
  await bull.close();
  redis.disconnect();
  await ch.deleteQueue(quorum).catch(() => undefined);
  await conn.close();
  await sqs.send(new DeleteQueueCommand({ QueueUrl: sqsUrl })).catch(() => undefined);
  sqs.destroy();
  await rm(dir, { recursive: true, force: true });
});

describe('queuescope CLI against real brokers', () => {
  it('--help lists the commands and the exit codes, exit 0', async () => {
    const r = await run(['--help']);
    expect(r.code).toBe(0);
    for (const s of ['connections', 'queues', 'peek', 'export', 'Exit codes:', '130  interrupted', '5    read refused']) expect(r.stdout).toContain(s);
    const p = await run(['peek', '--help']);
    expect(p.code).toBe(0);
    expect(p.stdout).toContain('--accept-side-effects');
    expect(p.stdout).toContain('Exit codes:');
  });

  it('queues --json lists the stream with its depth; the table shows it too', async () => {
    const r = await run(['queues', REDIS_URL, '--json', '--pattern', 'qs-test-cli-*']);
    expect(r.code).toBe(0);
    const qs = json<QueueSummary[]>(r);
    expect(qs.find((q) => q.name === stream)).toMatchObject({ id: `stream:${stream}`, kind: 'redis-stream', depth: 5 });
    const t = await run(['queues', REDIS_URL, '--pattern', stream]);
    expect(t.stdout).toMatch(new RegExp(`│ ${stream}\\s+│ redis-stream\\s+│ 5\\s+│`));
  });

  it('peek by name prints a table with escaped bodies: no raw control or bidi characters reach the terminal', async () => {
    const r = await run(['peek', REDIS_URL, stream]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('{"orderId":"A-1001"');
    expect(r.stdout).toContain('evil\\x1b]0;pwned\\x07\\x1b[2J\\x9b'); // the preview column is cut at 40 characters
    expect(RAW_CONTROL.test(r.stdout)).toBe(false);
    expect(r.stdout).toContain('5 messages of 5');
    const j = await run(['peek', REDIS_URL, stream, '--json']);
    expect(RAW_CONTROL.test(j.stdout)).toBe(false);
    expect(json<PeekPage>(j).messages[1]?.body.data).toBe('evil\u001b]0;pwned\u0007\u001b[2J\u009b31m\u202etxt\r\nline2'); // same value, escaped as JSON
  });

  it('peek --json pages with --limit and --cursor, and --newest reads from the end', async () => {
    const p1 = json<PeekPage>(await run(['peek', REDIS_URL, `stream:${stream}`, '--limit', '2', '--json']));
    expect(p1.messages).toHaveLength(2);
    expect(p1.nextCursor).not.toBeNull();
    const p2 = json<PeekPage>(await run(['peek', REDIS_URL, `stream:${stream}`, '--limit', '10', '--cursor', p1.nextCursor!, '--json']));
    expect(p2.messages.map((m) => m.body.data)).toEqual(['plain 0', 'plain 1', 'plain 2']);
    const n = json<PeekPage>(await run(['peek', REDIS_URL, stream, '--limit', '1', '--newest', '--json']));
    expect(n.messages[0]?.body.data).toBe('plain 2');
  });

  it('usage errors exit 2: bad --limit, unknown option, ambiguous name (listing the ids)', async () => {
    const a = await run(['peek', REDIS_URL, stream, '--limit', '0']);
    expect(a.code).toBe(2);
    expect(a.stderr).toContain('error: --limit must be a whole number from 1 to 1000');
    expect((await run(['peek', '--bogus'])).code).toBe(2);
    const amb = await run(['peek', REDIS_URL, twin]);
    expect(amb.code).toBe(2);
    expect(amb.stderr).toContain(`list:${twin}`);
    expect(amb.stderr).toContain(`bullmq:bull:${twin}`);
    expect(amb.stderr).not.toMatch(/\n\s+at /); // no stack trace
  });

  it('an unknown queue exits 4; with --json the error object goes to stdout', async () => {
    const r = await run(['peek', REDIS_URL, 'no-such-queue-here']);
    expect(r.code).toBe(4);
    expect(r.stderr).toMatch(/^error: No queue named or with id "no-such-queue-here"/);
    const j = await run(['peek', REDIS_URL, 'no-such-queue-here', '--json']);
    expect(j.code).toBe(4);
    expect(json<{ error: { code: string } }>(j).error.code).toBe('QUEUE_NOT_FOUND');
  });

  it('an unreachable broker exits 3 with no stack trace and no password', async () => {
    const r = await run(['queues', 'redis://:S3cretPw@127.0.0.1:1']);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/^error: /);
    expect(r.stderr).not.toContain('S3cretPw');
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it('refuses a quorum queue peek that could dead-letter (exit 5), stating the side effects; accepts with the flag', async () => {
    const r = await run(['peek', AMQP_URL, quorum, '--management-url', RABBITMQ_MANAGEMENT_URL]);
    expect(r.code).toBe(5);
    expect(r.stderr).toContain(`note: peeking ${quorum} changes it:`);
    expect(r.stderr).toMatch(/x-delivery-count/);
    expect(r.stderr).toContain('--accept-side-effects');
    expect(r.stdout).toBe('');
    expect((await ch.checkQueue(quorum)).messageCount).toBe(1);
    const ok = await run(['peek', AMQP_URL, quorum, '--accept-side-effects', '--json'], { env: { RABBITMQ_MANAGEMENT_URL } });
    expect(ok.code).toBe(0);
    expect(json<PeekPage>(ok).messages.map((m) => m.body.data)).toEqual(['hello']);
    expect(json<PeekPage>(ok).sideEffects.length).toBeGreaterThan(0);
  });

  it('takes the connection from the environment (SQS via AWS_REGION + AWS_ENDPOINT_URL_SQS)', async () => {
    const r = await run(['peek', sqsName, '--accept-side-effects', '--json'], { env: { AWS_REGION: SQS_REGION, AWS_ENDPOINT_URL_SQS: SQS_ENDPOINT } });
    expect(r.code).toBe(0);
    expect(json<PeekPage>(r).messages.map((m) => m.body.data)).toEqual(['sqs body']);
    const amb = await run(['queues'], { env: { REDIS_URL, AMQP_URL } });
    expect(amb.code).toBe(2);
    expect(amb.stderr).toContain('ambiguous');
  });

  it('export writes the file (progress as JSON lines when not a TTY), peek reads it back, no overwrite without --force', async () => {
    const out = join(dir, 'stream.jsonl');
    const r = await run(['export', REDIS_URL, stream, '--out', 'stream.jsonl']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Exported 5 messages of .* to .*stream\.jsonl \(\d+ bytes\)\.\n$/);
    const progress = r.stderr.trim().split('\n').map((l) => JSON.parse(l) as { type: string; status: string; processed: number });
    expect(progress.every((p) => p.type === 'progress')).toBe(true);
    expect(progress.at(-1)).toMatchObject({ status: 'completed', processed: 5 });
    const back = await run(['peek', out, '--json']);
    expect(back.code).toBe(0);
    expect(json<PeekPage>(back).messages.map((m) => m.body.data).slice(2)).toEqual(['plain 0', 'plain 1', 'plain 2']);
    expect((await run(['export', REDIS_URL, stream, '--out', out])).code).toBe(2);
    const j = await run(['export', REDIS_URL, stream, '--out', out, '--force', '--json']);
    expect(j.code).toBe(0);
    expect(json<{ messages: number; partial: boolean }>(j)).toMatchObject({ messages: 5, partial: false });
  });

  it('Ctrl+C during an export exits 130 and leaves no file behind', async () => {
    const ac = new AbortController();
    const out = join(dir, 'interrupted.jsonl');
    const r = await run(['export', REDIS_URL, big, '--out', out, '--page-size', '50'], {
      signal: ac.signal,
      onStderr: (s) => {
        if (s.includes('"processed"')) ac.abort();
      },
    });
    expect(r.stderr).toContain('error: Export cancelled');
    expect(r.code).toBe(130);
    expect(await exists(out)).toBe(false);
    expect((await readdir(dir)).filter((f) => f.startsWith('interrupted'))).toEqual([]);
  });
});

describe('queuescope CLI with snapshots and saved profiles', () => {
  it('peek --file with one queue needs no queue name; with two, it lists the ids', async () => {
    const many = await run(['peek', '--file', fixture]);
    expect(many.code).toBe(2);
    expect(many.stderr).toContain('stream:orders-stream, rabbitmq:%2F/orders.dlq');
    const one = await run(['peek', '--file', fixture, 'orders.dlq']);
    expect(one.code).toBe(0);
    expect(one.stdout).toContain('redelivered');
  });

  it('an invalid snapshot exits 2 naming the line and field', async () => {
    const r = await run(['queues', fileURLToPath(new URL('../fixtures/snapshots/invalid-body-encoding.jsonl', import.meta.url))]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/line 3, field "body\.encoding"/);
  });

  it('connections lists saved profiles without secrets; --profile NAME uses one', async () => {
    const store = await ProfileStore.open({ configDir: home });
    await store.save({ name: 'Local Redis', config: { kind: 'redis', url: REDIS_URL } });
    await store.save({ name: 'Rabbit', config: { kind: 'rabbitmq', url: 'amqp://guest:VerySecret1@127.0.0.1:5672' } });
    const list = await run(['connections', '--json']);
    expect(list.code).toBe(0);
    expect(list.stdout).not.toContain('VerySecret1');
    expect(json<{ name: string }[]>(list).map((p) => p.name)).toEqual(['Local Redis', 'Rabbit']);
    const table = await run(['connections']);
    expect(table.stdout).toContain('Local Redis');
    const q = await run(['queues', '--profile', 'local redis', '--pattern', stream, '--json']);
    expect(q.code).toBe(0);
    expect(json<QueueSummary[]>(q).map((x) => x.name)).toEqual([stream]);
    expect((await run(['queues', '--profile', 'nope'])).code).toBe(2);
  });

  it('a corrupt profiles.json is reported but never moved or changed by the CLI', async () => {
    const other = join(dir, 'corrupt-home');
    await rm(other, { recursive: true, force: true });
    await (await import('node:fs/promises')).mkdir(other);
    await writeFile(join(other, 'profiles.json'), '{not json');
    const r = await run(['connections'], { env: { QUEUESCOPE_HOME: other } });
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(join(other, 'profiles.json'));
    expect(await readdir(other)).toEqual(['profiles.json']);
  });
});

/**
 * DLQ alerts (issue 4) on the real brokers: the watcher over a Redis stream DLQ and a RabbitMQ DLQ
 * filled by real dead-lettering, and `queuescope watch` run in-process through `main()`.
 */
import { access, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import amqp from 'amqplib';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdapter } from '../../core/adapters';
import type { BrokerAdapter } from '../../core/adapters/types';
import { main, type CliIo } from '../../core/cli/main';
import { checkDlqsOnce, watchDlqs, type DlqWatchEvent } from '../../core/services/dlq-watch';
import { AMQP_URL, RABBITMQ_MANAGEMENT_URL, REDIS_URL, uniqueName } from './env';

const redis = new Redis(REDIS_URL);
const streamDlq = uniqueName('watch-stream-dlq');
// A name a shell would run if it ever reached a command line unquoted.
const evilKey = `${uniqueName('watch-evil')}-$(touch PWNED)`;
let conn: amqp.ChannelModel;
let ch: amqp.Channel;
const work = uniqueName('watch-work');
const rmqDlq = uniqueName('watch-dlq');
let dir: string;
const adapters: BrokerAdapter[] = [];

/** Waits until `check` is true (polls every 100 ms), failing after `ms`. */
async function until(check: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qs-watch-'));
  // An empty stream that exists (XADD then XDEL keeps the key with length 0).
  const id = await redis.xadd(streamDlq, '*', 'body', 'seed');
  await redis.xdel(streamDlq, id!);
  const evilId = await redis.xadd(evilKey, '*', 'body', 'seed');
  await redis.xdel(evilKey, evilId!);
  conn = await amqp.connect(AMQP_URL, { noDelay: true });
  ch = await conn.createChannel();
  await ch.assertQueue(rmqDlq, { durable: true });
  await ch.assertQueue(work, { durable: true, arguments: { 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': rmqDlq } });
});

afterAll(async () => {
  await Promise.all(adapters.map((a) => a.close().catch(() => undefined)));
  await redis.del(streamDlq, evilKey);
  redis.disconnect();
  await ch.deleteQueue(work).catch(() => undefined);
  await ch.deleteQueue(rmqDlq).catch(() => undefined);
  await conn.close();
  await rm(dir, { recursive: true, force: true });
});

/** Dead-letters one message through `work` the way a consumer rejecting it does. */
async function deadLetterOne(body: string, headers: Record<string, string> = {}): Promise<void> {
  ch.sendToQueue(work, Buffer.from(body), { persistent: true, headers });
  let msg: amqp.GetMessage | false = false;
  for (let i = 0; i < 50 && msg === false; i++) {
    msg = await ch.get(work, { noAck: false });
    if (msg === false) await sleep(50);
  }
  if (msg === false) throw new Error('the message never reached the work queue');
  ch.nack(msg, false, false);
}

describe('watchDlqs on the real brokers', () => {
  it('a Redis stream DLQ receiving its first message raises exactly one first-message, with the failure class', async () => {
    const adapter = createAdapter({ kind: 'redis', url: REDIS_URL });
    adapters.push(adapter);
    const events: DlqWatchEvent[] = [];
    const ac = new AbortController();
    const running = watchDlqs(adapter, { queueIds: [`stream:${streamDlq}`], intervalMs: 1_000, onEvent: (e) => events.push(e), signal: ac.signal });
    await until(() => events.length === 1, 10_000, 'the status event');
    expect(events[0]).toMatchObject({ type: 'status', depth: 0, queueName: streamDlq });
    await redis.xadd(streamDlq, '*', 'body', JSON.stringify({ orderId: 'A-1001' }), 'x-last-error', 'HTTP 422 Unprocessable Entity: amount must be positive');
    await until(() => events.length >= 2, 10_000, 'first-message');
    await sleep(2_500); // two more polls: nothing new while the depth stays 1
    ac.abort();
    await running;
    expect(events.map((e) => e.type)).toEqual(['status', 'first-message']);
    expect(events[1]).toMatchObject({ depth: 1, previousDepth: 0, delta: 1, failure: { class: 'non-retryable', label: 'HTTP 422', source: 'header x-last-error' } });
  });

  it('a RabbitMQ DLQ filled by real dead-lettering raises exactly one first-message, names its source, and is never peeked', async () => {
    const adapter = createAdapter({ kind: 'rabbitmq', url: AMQP_URL, managementUrl: RABBITMQ_MANAGEMENT_URL });
    adapters.push(adapter);
    const events: DlqWatchEvent[] = [];
    const ac = new AbortController();
    const dlqId = `rabbitmq:%2F/${rmqDlq}`;
    const running = watchDlqs(adapter, { queueIds: [dlqId], intervalMs: 1_000, onEvent: (e) => events.push(e), signal: ac.signal });
    await until(() => events.length === 1, 15_000, 'the status event');
    expect(events[0]).toMatchObject({ type: 'status', depth: 0 });
    await deadLetterOne(JSON.stringify({ orderId: 'A-2002' }), { 'x-last-error': 'HTTP 503 Service Unavailable' });
    await until(() => events.length >= 2, 15_000, 'first-message');
    await sleep(2_500);
    await deadLetterOne(JSON.stringify({ orderId: 'A-2003' }));
    await deadLetterOne(JSON.stringify({ orderId: 'A-2004' }));
    await until(() => events.some((e) => e.type === 'grew' && e.depth === 3), 15_000, 'grew to 3');
    ac.abort();
    await running;
    const types = events.map((e) => e.type);
    expect(types.filter((t) => t === 'first-message')).toHaveLength(1);
    expect(types[0]).toBe('status');
    expect(types[1]).toBe('first-message');
    expect(types.slice(2).every((t) => t === 'grew')).toBe(true);
    expect(events[1]).toMatchObject({ depth: 1, delta: 1, deadLetterSources: [`rabbitmq:%2F/${work}`], failure: null });
    expect(events[1]?.failureNote).toMatch(/never peeks/);
    // Never peeked: the dead letters were never delivered (no redelivered flag).
    const first = await ch.get(rmqDlq, { noAck: false });
    expect(first).not.toBe(false);
    if (first !== false) {
      expect(first.fields.redelivered).toBe(false);
      expect(JSON.parse(first.content.toString()) as unknown).toEqual({ orderId: 'A-2002' });
      ch.nack(first, false, true);
    }
  });
});

interface Run {
  code: number;
  stdout: () => string;
  stderr: () => string;
  done: Promise<number>;
  stop: () => void;
}
function startCli(argv: string[]): Run {
  let stdout = '';
  let stderr = '';
  const ac = new AbortController();
  const io: CliIo = {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    env: { QUEUESCOPE_HOME: join(dir, 'home'), PATH: process.env.PATH ?? '/usr/bin:/bin' },
    signal: ac.signal,
    cwd: dir,
  };
  const run: Run = { code: -1, stdout: () => stdout, stderr: () => stderr, done: main(argv, io), stop: () => ac.abort() };
  void run.done.then((c) => (run.code = c));
  return run;
}
const lines = (s: string): DlqWatchEvent[] =>
  s
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as DlqWatchEvent);

describe('queuescope watch (in-process main)', () => {
  it('prints JSON lines, runs --exec per event with the event in QUEUESCOPE_* and on stdin — broker names never reach the shell — and exits 130 on Ctrl+C', async () => {
    const envOut = join(dir, 'exec-env.txt');
    const stdinOut = join(dir, 'exec-stdin.jsonl');
    const exec = `printf '%s|%s|%s|%s\\n' "$QUEUESCOPE_EVENT" "$QUEUESCOPE_QUEUE" "$QUEUESCOPE_DEPTH" "$QUEUESCOPE_DELTA" >> ${envOut}; cat >> ${stdinOut}`;
    const r = startCli(['watch', REDIS_URL, `stream:${evilKey}`, '--interval', '1s', '--json', '--exec', exec]);
    await until(() => lines(r.stdout()).length === 1, 15_000, 'the status line');
    expect(lines(r.stdout())[0]).toMatchObject({ type: 'status', depth: 0, queueName: evilKey });
    await redis.xadd(evilKey, '*', 'body', 'x', 'error', 'connect ETIMEDOUT 10.1.2.3:443');
    await until(() => lines(r.stdout()).some((e) => e.type === 'first-message'), 10_000, 'first-message');
    await redis.xadd(evilKey, '*', 'body', 'y');
    await redis.xadd(evilKey, '*', 'body', 'z');
    await until(() => lines(r.stdout()).some((e) => e.type === 'grew'), 10_000, 'grew');
    // Let the command for grew finish before stopping (it is killed on Ctrl+C otherwise).
    const execLines = async (): Promise<number> => (await readFile(envOut, 'utf8').catch(() => '')).split('\n').filter((l) => l !== '').length;
    for (let i = 0; i < 50 && (await execLines()) < 2; i++) await sleep(100);
    r.stop();
    expect(await r.done).toBe(130);
    const events = lines(r.stdout());
    expect(events.map((e) => e.type)).toEqual(['status', 'first-message', 'grew']);
    expect(events[1]).toMatchObject({ depth: 1, delta: 1, failure: { class: 'transient', label: 'timeout' } });
    expect(events[2]).toMatchObject({ depth: 3, delta: 2 });
    // --exec ran for first-message and grew (not for the status line), in order.
    expect((await readFile(envOut, 'utf8')).trim().split('\n')).toEqual([`first-message|${evilKey}|1|1`, `grew|${evilKey}|3|2`]);
    const fromStdin = (await readFile(stdinOut, 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as DlqWatchEvent);
    expect(fromStdin.map((e) => [e.type, e.queueId, e.depth])).toEqual([
      ['first-message', `stream:${evilKey}`, 1],
      ['grew', `stream:${evilKey}`, 3],
    ]);
    // The queue name contains $(touch PWNED): it went only into the environment and stdin.
    await expect(access(join(dir, 'PWNED'))).rejects.toThrow();
    expect(r.stderr()).not.toContain('warning');
  });

  it('human lines by name; --once exits 6 when a DLQ holds messages, 0 when empty, 4 for an unknown queue; usage errors exit 2', async () => {
    const once = startCli(['watch', REDIS_URL, streamDlq, '--once']);
    expect(await once.done).toBe(6);
    expect(once.stdout()).toMatch(new RegExp(`^\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\dZ  status\\s+${streamDlq}  depth 1  newest: non-retryable \\(HTTP 422\\) — HTTP 422 Unprocessable Entity: amount must be positive\\n$`));
    const empty = uniqueName('watch-empty');
    const id = await redis.xadd(empty, '*', 'body', 'seed');
    await redis.xdel(empty, id!);
    try {
      const e = startCli(['watch', REDIS_URL, empty, '--once', '--json']);
      expect(await e.done).toBe(0);
      expect(lines(e.stdout())).toMatchObject([{ type: 'status', depth: 0 }]);
    } finally {
      await redis.del(empty);
    }
    const missing = startCli(['watch', REDIS_URL, uniqueName('watch-missing'), '--once']);
    expect(await missing.done).toBe(4);
    const fast = startCli(['watch', REDIS_URL, streamDlq, '--interval', '200ms']);
    expect(await fast.done).toBe(2);
    expect(fast.stderr()).toContain('at least 1 s');
    const none = startCli(['watch', REDIS_URL]);
    expect(await none.done).toBe(2);
    expect(none.stderr()).toContain('Name at least one dead-letter queue');
    const both = startCli(['watch', REDIS_URL, streamDlq, '--once', '--exec', 'true']);
    expect(await both.done).toBe(2);
  });
});

describe('watchDlqs when the broker goes away (private redis-server)', () => {
  it('reports error once while Redis is down, backs off, then recovered and the first message that arrived', async () => {
    const { execFileSync } = await import('node:child_process');
    const port = 20_000 + Math.floor(Math.random() * 9_000); // a private server, away from the shared one and other tests' fixed ports
    const cli = (...args: string[]): string => execFileSync('redis-cli', ['-p', String(port), ...args], { encoding: 'utf8' });
    const startServer = (): void => void execFileSync('redis-server', ['--port', String(port), '--save', '', '--appendonly', 'no', '--daemonize', 'yes', '--bind', '127.0.0.1']);
    const waitUp = async (): Promise<void> => {
      for (let i = 0; i < 50; i++) {
        try {
          if (cli('ping').trim() === 'PONG') return;
        } catch {
          /* not yet */
        }
        await sleep(100);
      }
      throw new Error('private redis-server did not start');
    };
    startServer();
    await waitUp();
    const adapter = createAdapter({ kind: 'redis', url: `redis://127.0.0.1:${port}` });
    const ac = new AbortController();
    try {
      const key = 'orders-dlq';
      cli('XADD', key, '*', 'body', 'seed');
      cli('XTRIM', key, 'MAXLEN', '0');
      const events: DlqWatchEvent[] = [];
      const running = watchDlqs(adapter, { queueIds: [`stream:${key}`], intervalMs: 1_000, maxBackoffMs: 4_000, onEvent: (e) => events.push(e), signal: ac.signal });
      await until(() => events.length === 1, 10_000, 'status');
      expect(events[0]).toMatchObject({ type: 'status', depth: 0 });
      try {
        cli('SHUTDOWN', 'NOSAVE');
      } catch {
        /* the connection closes as it shuts down */
      }
      await until(() => events.some((e) => e.type === 'error'), 20_000, 'the error event');
      await sleep(4_000); // several failed polls: still one error event
      expect(events.filter((e) => e.type === 'error')).toHaveLength(1);
      expect(events[1]?.error?.code).toMatch(/HOST_UNREACHABLE|TIMEOUT|BROKER_ERROR/);
      startServer(); // empty (no persistence): the stream is gone until the next dead letter
      await waitUp();
      cli('XADD', key, '*', 'body', '{"orderId":"A-9"}', 'error', 'HTTP 503 Service Unavailable');
      await until(() => events.some((e) => e.type === 'first-message'), 30_000, 'recovered + first-message');
      ac.abort();
      await running;
      expect(events.map((e) => e.type)).toEqual(['status', 'error', 'recovered', 'first-message']);
      expect(events[3]).toMatchObject({ depth: 1, previousDepth: 0, failure: { class: 'transient', label: 'HTTP 503' } });
    } finally {
      ac.abort();
      await adapter.close().catch(() => undefined);
      try {
        cli('SHUTDOWN', 'NOSAVE');
      } catch {
        /* already stopped */
      }
    }
  });
});

describe('a RabbitMQ DLQ whose consumer holds every dead letter unacknowledged', () => {
  it('checkDlqsOnce counts the held messages (they are still in the DLQ; the ready count alone is 0)', async () => {
    const q = uniqueName('watch-held');
    const c = await amqp.connect(AMQP_URL, { noDelay: true });
    const adapter = createAdapter({ kind: 'rabbitmq', url: AMQP_URL, managementUrl: RABBITMQ_MANAGEMENT_URL });
    try {
      const pub = await c.createConfirmChannel();
      await pub.assertQueue(q, { durable: false });
      for (let i = 0; i < 3; i++) pub.sendToQueue(q, Buffer.from(`{"n":${i}}`));
      await pub.waitForConfirms();
      const holder = await c.createChannel();
      await holder.prefetch(10);
      let held = 0;
      await holder.consume(q, () => {
        held++;
      });
      // The management statistics (refreshed every 5 s) must show the 3 as unacknowledged first.
      const auth = `Basic ${Buffer.from('guest:guest').toString('base64')}`;
      const t0 = Date.now();
      for (;;) {
        const body = (await (await fetch(`${RABBITMQ_MANAGEMENT_URL}/api/queues/%2F/${encodeURIComponent(q)}`, { headers: { authorization: auth } })).json()) as { messages?: number; messages_unacknowledged?: number };
        if (held === 3 && body.messages_unacknowledged === 3 && body.messages === 3) break;
        if (Date.now() - t0 > 30_000) throw new Error(`statistics did not show the held messages: ${JSON.stringify(body)}`);
        await new Promise((r) => setTimeout(r, 500));
      }
      const summary = await adapter.getQueue(`rabbitmq:%2F/${q}`);
      expect(summary.depth).toBe(0); // ready
      const [e] = await checkDlqsOnce(adapter, [summary.id], { classifyNewest: false });
      expect(e?.depth).toBe(3);
    } finally {
      await adapter.close();
      const ch2 = await c.createChannel();
      await ch2.deleteQueue(q).catch(() => undefined);
      await c.close();
    }
  }, 60_000);
});

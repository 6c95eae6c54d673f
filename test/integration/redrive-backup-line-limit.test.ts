import { createHash } from 'node:crypto';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_SNAPSHOT_LINE_BYTES } from '../../core/snapshot/format';
import { runCli } from './fixtures/run-cli';
import { AMQP_URL, REDIS_URL, uniqueName } from './env';
import { closeNative, nativeChannel, nativeCount, nativeDeleteQueue } from './rabbitmq-native';

/**
 * A redrive backup must read back. A 70 MiB Redis list element redriven with
 * `--max-body-bytes 100000000` (allowed up to 128 MiB) was backed up as a 73 MB line, and every
 * reader (`reinject --from`, `inspect`, `peek`) then refused the backup with exit 2 "line is longer
 * than 67108864 bytes": a "never loses a message" backup that could not be restored. Writers and
 * readers now share one limit (256 MiB, room for a 128 MiB body as base64 or ordinary text), and a
 * message whose line would be longer stays in the DLQ, reported as not moved (exit 7), instead of
 * being moved with a backup nobody can read.
 */

const native = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
const keys: string[] = [];
const queues: string[] = [];
let dir = '';

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qs-line-limit-'));
});

afterAll(async () => {
  if (keys.length > 0) await native.del(...keys);
  native.disconnect();
  for (const q of queues) await nativeDeleteQueue(q);
  await closeNative();
  await rm(dir, { recursive: true, force: true });
});

function key(label: string): string {
  const k = uniqueName(`line-limit-${label}`);
  keys.push(k);
  return k;
}

const sha = (b: Buffer | string): string => createHash('sha256').update(b).digest('hex');

describe('redrive backup of a message larger than the old 64 MiB line limit', () => {
  it('a 70 MiB JSON element moves, its backup reads back (peek, inspect) and reinject restores it byte for byte', async () => {
    const dlq = key('dlq');
    const target = key('target');
    const big = JSON.stringify({ orderId: 'BIG-1', error: 'HTTP 503', blob: 'x'.repeat(70 * 1024 * 1024) });
    await native.rpush(dlq, big);
    const want = sha(big);

    const backup = join(dir, 'big-backup.jsonl');
    let r = await runCli(dir, ['redrive', REDIS_URL, `list:${dlq}`, '--to', `list:${target}`, '--max-body-bytes', '100000000', '--backup', backup, '--yes', '--json']);
    expect(r.stderr).not.toMatch(/error|longer than/i);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { status: string; result: { moved: number; failed: number; backupPath: string } };
    expect(out.status).toBe('completed');
    expect(out.result.moved).toBe(1);
    expect(out.result.backupPath).toBe(backup);
    expect((await stat(backup)).size).toBeGreaterThan(64 * 1024 * 1024);
    expect(await native.llen(dlq)).toBe(0);
    expect(sha((await native.lindexBuffer(target, 0))!)).toBe(want);

    // The backup reads back: peek shows the message (its body cut to peek's 1 MiB, with the full size), inspect reads it.
    r = await runCli(dir, ['peek', backup, '--json']);
    expect(r.stderr).not.toMatch(/longer than/);
    expect(r.code).toBe(0);
    const peeked = JSON.parse(r.stdout) as { messages: { body: { sizeBytes: number; truncated: boolean } }[] };
    expect(peeked.messages).toHaveLength(1);
    expect(peeked.messages[0]!.body.sizeBytes).toBe(Buffer.byteLength(big));
    expect(peeked.messages[0]!.body.truncated).toBe(true);

    r = await runCli(dir, ['inspect', backup, '--json']);
    expect(r.stderr).not.toMatch(/longer than/);
    expect(r.code).toBe(0);

    // Put it back into an emptied target from the backup: the same bytes.
    await native.del(target);
    r = await runCli(dir, ['reinject', REDIS_URL, `list:${target}`, '--from', backup, '--yes', '--json']);
    expect(r.stderr).not.toMatch(/longer than/);
    expect(r.code).toBe(0);
    expect(await native.llen(target)).toBe(1);
    expect(sha((await native.lindexBuffer(target, 0))!)).toBe(want);
  }, 120_000);

  it('a message whose backup line would be longer than the readers accept stays in the DLQ, reported as not moved (exit 7)', async () => {
    const dlq = key('dlq');
    const target = key('target');
    // Valid UTF-8, but every byte is a control character: JSON writes each as \u0001 (6 bytes), so
    // a 46 MiB body makes a ~289 MB line — over the 256 MiB limit, while the body is under --max-body-bytes.
    const body = Buffer.alloc(46 * 1024 * 1024, 1);
    expect(6 * body.length).toBeGreaterThan(MAX_SNAPSHOT_LINE_BYTES);
    await native.rpush(dlq, body);
    const want = sha(body);

    const backup = join(dir, 'control-backup.jsonl');
    const r = await runCli(dir, ['redrive', REDIS_URL, `list:${dlq}`, '--to', `list:${target}`, '--max-body-bytes', '100000000', '--backup', backup, '--yes']);
    expect(r.code).toBe(7);
    const said = r.stdout + r.stderr;
    expect(said).toMatch(/would be longer than 268435456 bytes \(256\.0 MiB\), the longest line a snapshot reader accepts/);
    // Still in the DLQ, unchanged; nothing in the target; no backup that cannot be read.
    expect(await native.llen(dlq)).toBe(1);
    expect(sha((await native.lindexBuffer(dlq, 0))!)).toBe(want);
    expect(await native.exists(target)).toBe(0);
    await expect(stat(backup)).rejects.toThrow();
  }, 120_000);

  it('export leaves out a message whose line no reader accepts, lists it, exits 7, and the file it wrote reads back', async () => {
    const stream = key('stream');
    // A stream entry's fields other than the body are exported whole as headers (only bodies are cut at 8 MiB).
    const first = await native.xadd(stream, '*', 'body', '{"orderId":"A-1"}');
    const huge = await native.xadd(stream, '*', 'body', '{"orderId":"HUGE"}', 'trace', Buffer.alloc(46 * 1024 * 1024, 1));
    const last = await native.xadd(stream, '*', 'body', '{"orderId":"A-2"}');
    const out = join(dir, 'export.jsonl');
    let r = await runCli(dir, ['export', REDIS_URL, `stream:${stream}`, '--out', out]);
    expect(r.code).toBe(7);
    expect(r.stdout).toMatch(/Exported 2 messages/);
    expect(r.stderr).toContain(`error: Message ${huge!} cannot be written: its snapshot line`);
    expect(r.stderr).toMatch(/warning: the export is partial: 1 message was not written: its line would be longer than 268435456 bytes/);

    r = await runCli(dir, ['peek', out, '--json']);
    expect(r.code).toBe(0);
    const peeked = JSON.parse(r.stdout) as { messages: { id: string }[] };
    expect(peeked.messages.map((m) => m.id)).toEqual([first, last]);
  }, 120_000);

  it('RabbitMQ: such a message stays in the DLQ with its bytes, reported as not moved (exit 7); the others move', async () => {
    const dlq = uniqueName('line-limit-dlq');
    const target = uniqueName('line-limit-target');
    queues.push(dlq, target);
    const ch = await nativeChannel();
    await ch.assertQueue(dlq, { durable: true });
    await ch.assertQueue(target, { durable: true });
    const body = Buffer.alloc(46 * 1024 * 1024, 1);
    ch.sendToQueue(dlq, Buffer.from('{"orderId":"R-1"}'), { messageId: 'small-1', persistent: true });
    ch.sendToQueue(dlq, body, { messageId: 'control-1', persistent: true });
    await ch.waitForConfirms();
    await ch.close();

    const r = await runCli(dir, ['redrive', AMQP_URL, dlq, '--to', target, '--max-body-bytes', '100000000', '--yes']);
    expect(r.code, r.stdout + r.stderr).toBe(7);
    expect(r.stdout + r.stderr).toMatch(/would be longer than 268435456 bytes \(256\.0 MiB\), the longest line a snapshot reader accepts/);
    expect(await nativeCount(target)).toBe(1);
    expect(await nativeCount(dlq)).toBe(1);
    const get = await nativeChannel();
    const left = await get.get(dlq, { noAck: false });
    expect(left && left.properties.messageId).toBe('control-1');
    expect(left && sha(left.content)).toBe(sha(body));
    if (left) get.nack(left, false, true);
    await get.close();
  }, 120_000);
});

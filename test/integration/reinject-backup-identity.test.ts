import { copyFile, mkdtemp, readFile, readdir, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { EXIT } from '../../core/cli/exit-codes';
import { AMQP_URL, uniqueName } from './env';
import { runCliMerged } from './fixtures/run-cli';
import { closeNative, nativeChannel, nativeCount, nativeDeleteQueue, nativeTakeAll } from './rabbitmq-native';

/**
 * A redrive backup also holds the messages its redrive backed up and then did not move (they stayed
 * in the DLQ); `reinject` leaves them out, found by the redrive's audit-log record. Old code looked
 * that record up by the backup's path only: a copy or renamed backup, or the backup re-injected from
 * another profile (QUEUESCOPE_HOME), published all of them silently — duplicates of what is still in
 * the DLQ. Against real RabbitMQ: a target that refuses publishes past 5 (x-max-length 5,
 * reject-publish), so a redrive of 12 moves 5 and 7 stay.
 */

const dirs: string[] = [];
const queues: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});
afterAll(async () => {
  for (const q of queues) await nativeDeleteQueue(q);
  await closeNative();
});

async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'qs-backup-identity-'));
  dirs.push(d);
  return d;
}

async function declare(label: string, args: Record<string, unknown> = {}): Promise<string> {
  const name = uniqueName(label);
  queues.push(name);
  const ch = await nativeChannel();
  try {
    await ch.assertQueue(name, { durable: true, arguments: args });
  } finally {
    await ch.close().catch(() => undefined);
  }
  return name;
}


const body = (i: number): string => `{"orderId":"o-${String(i)}"}`;

/** A DLQ of 12 and a target that holds 5: a client-side redrive moves o-1..o-5, o-6..o-12 stay. Returns the backup's path. */
async function redriveFiveOfTwelve(dir: string): Promise<{ dlq: string; target: string; backup: string }> {
  const dlq = await declare('bi-dlq');
  const target = await declare('bi-target', { 'x-max-length': 5, 'x-overflow': 'reject-publish' });
  const ch = await nativeChannel();
  try {
    for (let i = 1; i <= 12; i++) ch.sendToQueue(dlq, Buffer.from(body(i)), { persistent: true, contentType: 'application/json', messageId: `o-${String(i)}` });
    await ch.waitForConfirms();
  } finally {
    await ch.close().catch(() => undefined);
  }
  const rd = await runCliMerged(dir, ['redrive', AMQP_URL, dlq, '--to', target, '--no-native', '--yes']);
  expect(rd.code, rd.out).toBe(EXIT.PARTIAL);
  expect(await nativeCount(target)).toBe(5);
  expect(await nativeCount(dlq)).toBe(7);
  const files = await readdir(join(dir, 'home', 'backups'));
  expect(files).toHaveLength(1);
  return { dlq, target, backup: join(dir, 'home', 'backups', files[0]!) };
}

/** The warnings a CLI run printed ("warning: …" lines), with `path` replaced by `<file>`. */
function warnings(out: string, path: string): string[] {
  return out
    .split('\n')
    .filter((l) => l.startsWith('warning: '))
    .map((l) => l.split(path).join('<file>'));
}

describe('reinject finds a backup’s redrive record by the identity in its header', () => {
  it('a copy and a renamed backup leave out the 7 the redrive did not move, with the same warnings as the original path', async () => {
    const dir = await tempDir();
    const { dlq, backup } = await redriveFiveOfTwelve(dir);

    // The original path: as before the fix.
    const byPath = await runCliMerged(dir, ['reinject', AMQP_URL, dlq, '--from', backup]);
    expect(byPath.code, byPath.out).toBe(EXIT.NOT_CONFIRMED);
    const expected = warnings(byPath.out, backup);
    expect(expected.join('\n')).toContain('7 of the 12 messages in <file> were not moved by the redrive that wrote it');
    expect(expected.join('\n')).toContain('moved 5 of its messages to');

    // A copy elsewhere: the same warnings, the 7 left out.
    const copy = join(dir, 'x.jsonl');
    await copyFile(backup, copy);
    const asked = await runCliMerged(dir, ['reinject', AMQP_URL, dlq, '--from', copy]);
    expect(asked.code, asked.out).toBe(EXIT.NOT_CONFIRMED);
    expect(warnings(asked.out, copy)).toEqual(expected);
    const target2 = await declare('bi-back');
    const r = await runCliMerged(dir, ['reinject', AMQP_URL, target2, '--from', copy, '--yes', '--json']);
    expect(r.code, r.out).toBe(0);
    const json = JSON.parse(r.out.slice(r.out.indexOf('{\n'))) as { result: { read: number; published: number; leftOut: number } };
    expect(json.result).toMatchObject({ read: 12, published: 5, leftOut: 7 });
    expect((await nativeTakeAll(target2)).sort()).toEqual([1, 2, 3, 4, 5].map(body).sort());
    expect(await nativeCount(dlq)).toBe(7);

    // The original moved away (renamed): found by its identity too, and the re-inject of the copy counts as an earlier use.
    const moved = join(dir, 'renamed.jsonl');
    await rename(backup, moved);
    const again = await runCliMerged(dir, ['reinject', AMQP_URL, target2, '--from', moved]);
    expect(again.code, again.out).toBe(EXIT.NOT_CONFIRMED);
    const w = warnings(again.out, moved).join('\n');
    expect(w).toContain('7 of the 12 messages in <file> were not moved by the redrive that wrote it');
    expect(w).toContain('this backup was already re-injected');
    expect(w).toContain('They are left out: 5 are published.');
    expect(await nativeCount(target2)).toBe(0);
    // The identity: the redrive's operation id, in the backup's header and its audit entries.
    const header = JSON.parse((await readFile(moved, 'utf8')).split('\n')[0]!) as { redriveRun?: { id: string } };
    expect(header.redriveRun?.id).toMatch(/^[0-9a-f-]{36}$/);
    const h = await runCliMerged(dir, ['history', '--json', '--action', 'redrive']);
    expect(h.out).toContain(`"operationId": "${header.redriveRun!.id}"`);
  });

  it('in a profile with no record of the redrive (another QUEUESCOPE_HOME) it warns that the not-moved messages cannot be told apart and does not publish without --yes', async () => {
    const dir = await tempDir();
    const { dlq, backup } = await redriveFiveOfTwelve(dir);
    const header = JSON.parse((await readFile(backup, 'utf8')).split('\n')[0]!) as { redriveRun: { id: string }; exportedAt: number };
    const other = await tempDir(); // its own home: an empty audit log
    const target2 = await declare('bi-other');

    const asked = await runCliMerged(other, ['reinject', AMQP_URL, target2, '--from', backup]);
    expect(asked.code, asked.out).toBe(EXIT.NOT_CONFIRMED);
    const w = warnings(asked.out, backup).join('\n');
    expect(w).toContain('no record of');
    expect(w).toContain(`<file> is the backup of a redrive (run ${header.redriveRun.id}, started ${new Date(header.exportedAt).toISOString().replace(/\.\d{3}Z$/, 'Z')})`);
    expect(w).toContain('may be published again');
    expect(asked.out).toContain('error: not publishing without confirmation: pass --yes');
    expect(await nativeCount(target2)).toBe(0);

    // With --yes it publishes all 12 (they cannot be told apart) and --json carries the warning.
    const r = await runCliMerged(other, ['reinject', AMQP_URL, target2, '--from', backup, '--yes', '--json']);
    expect(r.code, r.out).toBe(0);
    const json = JSON.parse(r.out.slice(r.out.indexOf('{\n'))) as { result: { published: number; leftOut: number; notes: string[] } };
    expect(json.result).toMatchObject({ published: 12, leftOut: 0 });
    expect(json.result.notes.join('\n')).toContain(`is the backup of a redrive (run ${header.redriveRun.id}`);
    expect(await nativeCount(target2)).toBe(12);
    expect(await nativeCount(dlq)).toBe(7);
  });

  it('a remainder of a copied backup holds only moved messages and re-injects whole, without the original’s record or the no-record warning', async () => {
    const dir = await tempDir();
    const { backup } = await redriveFiveOfTwelve(dir);
    const copy = join(dir, 'copy.jsonl');
    await copyFile(backup, copy);
    const small = await declare('bi-small', { 'x-max-length': 3, 'x-overflow': 'reject-publish' });

    const r1 = await runCliMerged(dir, ['reinject', AMQP_URL, small, '--from', copy, '--yes', '--json']);
    expect(r1.code, r1.out).toBe(EXIT.PARTIAL);
    const json = JSON.parse(r1.out.slice(r1.out.indexOf('{\n'))) as { result: { published: number; failed: number; leftOut: number; remainder: { path: string; messages: number } | null } };
    expect(json.result).toMatchObject({ published: 3, failed: 2, leftOut: 7, remainder: { messages: 2 } });
    const rest = json.result.remainder!.path;
    const restHeader = JSON.parse((await readFile(rest, 'utf8')).split('\n')[0]!) as Record<string, unknown>;
    expect(restHeader.redriveRun).toBeUndefined();
    expect(restHeader.remainderOf).toMatchObject({ path: copy });
    const delivered = await nativeTakeAll(small);

    const r2 = await runCliMerged(dir, ['reinject', AMQP_URL, small, '--from', rest, '--yes']);
    expect(r2.code, r2.out).toBe(0);
    expect(r2.out).toContain(`Re-injected 2 of 2 messages from ${rest} into ${small}.`);
    expect(r2.out).not.toContain('warning:');
    delivered.push(...(await nativeTakeAll(small)));
    expect(delivered.sort()).toEqual([1, 2, 3, 4, 5].map(body).sort());
  });
});

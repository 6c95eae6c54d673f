import { getEventListeners } from 'node:events';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateQueueCommand, DeleteQueueCommand, SQSClient } from '@aws-sdk/client-sqs';
import amqp from 'amqplib';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main, type CliIo } from '../../core/cli/main';
import { EXIT } from '../../core/cli/exit-codes';
import { createSqsAdapter } from '../../core/adapters/sqs';
import { AMQP_URL, REDIS_URL, SQS_ENDPOINT, SQS_REGION, SQS_TEST_CREDENTIALS, uniqueName } from './env';

/**
 * Tester-found edges of `queuescope redrive` / `reinject` on the real brokers: bodies over the read
 * limit (listed by the dry run, movable with --max-body-bytes), picked ids that do not exist (listed,
 * exit 7), Ctrl+C (final counts and backup path, exit 130) and `--file` (usage error, exit 2).
 */

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}
let home: string;
let dir: string;
async function cli(argv: string[], signal?: AbortSignal): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const io: CliIo = {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    env: { QUEUESCOPE_HOME: home },
    cwd: dir,
    ...(signal !== undefined ? { signal } : {}),
  };
  const code = await main(argv, io);
  return { code, stdout, stderr };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qs-redrive-edges-'));
  home = join(dir, 'home');
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('redrive: bodies over the read limit (RabbitMQ)', () => {
  const dlq = uniqueName('rd-big-dlq');
  const target = uniqueName('rd-big-work');
  let conn: amqp.ChannelModel;
  let ch: amqp.Channel;
  const big = Buffer.alloc(3 * 1024 * 1024, 'x');

  beforeAll(async () => {
    conn = await amqp.connect(AMQP_URL);
    ch = await conn.createChannel();
    await ch.assertQueue(dlq, { durable: false });
    await ch.assertQueue(target, { durable: false });
    for (let i = 0; i < 4; i++) ch.sendToQueue(dlq, Buffer.from(`{"orderId":"A-${i}"}`), { messageId: `small-${i}` });
    ch.sendToQueue(dlq, big, { messageId: 'big-1' });
    await new Promise((r) => setTimeout(r, 500));
  });
  afterAll(async () => {
    await ch.deleteQueue(dlq).catch(() => undefined);
    await ch.deleteQueue(target).catch(() => undefined);
    await conn.close();
  });

  it('the dry run lists the message that cannot move, with its id and reason, and the counts add up', async () => {
    const r = await cli(['redrive', AMQP_URL, dlq, '--to', target, '--dry-run', '--json', '--no-native']);
    // Exit 7, as the run would (it reports the message failed): a script checking the dry run first sees it (it exited 0).
    expect(r.code, r.stderr).toBe(EXIT.PARTIAL);
    const plan = JSON.parse(r.stdout) as { examined: number; toMove: number; toSkip: number; failed: number; cannotMove: { id: string; reason: string }[]; targets: { count: number }[] };
    expect(plan.examined).toBe(5);
    expect(plan.failed).toBe(1);
    expect(plan.toMove).toBe(4);
    expect(plan.toMove + plan.toSkip + plan.failed).toBe(plan.examined);
    expect(plan.targets.reduce((n, t) => n + t.count, 0)).toBe(4);
    expect(plan.cannotMove).toHaveLength(1);
    expect(plan.cannotMove[0]?.reason).toMatch(/3145728 bytes.*read limit/);

    const text = await cli(['redrive', AMQP_URL, dlq, '--to', target, '--dry-run', '--no-native']);
    expect(text.code).toBe(EXIT.PARTIAL);
    expect(text.stdout).toContain('cannot move 1:');
    expect(text.stdout).toContain(plan.cannotMove[0]?.id ?? 'missing');
    expect(text.stdout).toContain('--max-body-bytes');
  });

  it('--max-body-bytes above 128 MiB is a usage error', async () => {
    const r = await cli(['redrive', AMQP_URL, dlq, '--to', target, '--dry-run', '--max-body-bytes', String(128 * 1024 * 1024 + 1)]);
    expect(r.code).toBe(EXIT.USAGE);
    expect(r.stderr).toContain('--max-body-bytes');
  });

  it('with --max-body-bytes 4 MiB the big message moves whole', async () => {
    const dry = await cli(['redrive', AMQP_URL, dlq, '--to', target, '--dry-run', '--json', '--no-native', '--max-body-bytes', String(4 * 1024 * 1024)]);
    const plan = JSON.parse(dry.stdout) as { toMove: number; failed: number; maxBodyBytes: number };
    expect(plan).toMatchObject({ toMove: 5, failed: 0, maxBodyBytes: 4 * 1024 * 1024 });
    const run = await cli(['redrive', AMQP_URL, dlq, '--to', target, '--yes', '--json', '--no-native', '--max-body-bytes', String(4 * 1024 * 1024)]);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    const out = JSON.parse(run.stdout) as { status: string; result: { moved: number; failed: number } };
    expect(out.result).toMatchObject({ moved: 5, failed: 0 });
    const sizes: number[] = [];
    for (;;) {
      const m = await ch.get(target, { noAck: true });
      if (m === false) break;
      sizes.push(m.content.length);
    }
    expect(sizes.sort((a, b) => b - a)[0]).toBe(big.length);
    expect(sizes).toHaveLength(5);
  });
});

describe('redrive on a Redis list: picked ids, Ctrl+C, --file', () => {
  const redis = new Redis(REDIS_URL);
  const key = uniqueName('rd-edges-dlq');
  const targetKey = uniqueName('rd-edges-work');

  beforeAll(async () => {
    await redis.rpush(key, ...Array.from({ length: 30 }, (_, i) => `{"orderId":"A-${i}"}`));
    await redis.rpush(targetKey, 'seed');
  });
  afterAll(async () => {
    await redis.del(key, targetKey);
    await redis.quit();
  });

  it('--ids picked from a peek no longer matches after another client pops the list: reported not found, nothing else moves', async () => {
    const k = uniqueName('rd-shift');
    const t = uniqueName('rd-shift-target');
    try {
      await redis.rpush(k, ...Array.from({ length: 10 }, (_, i) => `{"orderId":"S-${i}"}`));
      const peek = await cli(['peek', REDIS_URL, `list:${k}`, '--json', '--limit', '10']);
      const ids = (JSON.parse(peek.stdout) as { messages: { id: string; body: { data: string } }[] }).messages;
      const picked = ids[7];
      expect(picked?.body.data).toBe('{"orderId":"S-7"}');
      await redis.lpop(k); // another client consumes the head: every index shifts by one
      const r = await cli(['redrive', REDIS_URL, `list:${k}`, '--to', `list:${t}`, '--ids', picked?.id ?? '', '--yes']);
      expect(r.code, r.stderr).toBe(EXIT.PARTIAL);
      expect(r.stdout + r.stderr).toContain(`picked id was not found in the DLQ: ${picked?.id ?? ''}`);
      expect(await redis.llen(t)).toBe(0); // before: the entry now at #7 (S-8) was moved instead
      expect(await redis.llen(k)).toBe(9);
    } finally {
      await redis.del(k, t);
    }
  });

  it('--ids with an id that does not exist: listed, JSON field, exit 7; the existing one moves', async () => {
    const dry = await cli(['redrive', REDIS_URL, `list:${key}`, '--to', `list:${targetKey}`, '--dry-run', '--json']);
    const plan = JSON.parse(dry.stdout) as { samples: { id: string }[] };
    const real = plan.samples[0]?.id ?? 'none';
    const missing = `${real}-does-not-exist`;
    const dryIds = await cli(['redrive', REDIS_URL, `list:${key}`, '--to', `list:${targetKey}`, '--dry-run', '--ids', `${real},${missing}`]);
    expect(dryIds.stdout).toContain(`1 picked id was not found in the DLQ: ${missing}`);
    expect(dryIds.code).toBe(EXIT.PARTIAL); // the dry run says it too
    const r = await cli(['redrive', REDIS_URL, `list:${key}`, '--to', `list:${targetKey}`, '--ids', `${real},${missing}`, '--yes', '--json']);
    expect(r.code).toBe(EXIT.PARTIAL);
    const out = JSON.parse(r.stdout) as { result: { moved: number; notFoundIds: string[] } };
    expect(out.result.moved).toBe(1);
    expect(out.result.notFoundIds).toEqual([missing]);
    const text = await cli(['redrive', REDIS_URL, `list:${key}`, '--to', `list:${targetKey}`, '--ids', missing, '--yes']);
    expect(text.code).toBe(EXIT.PARTIAL);
    expect(text.stdout + text.stderr).toContain(`not found in the DLQ: ${missing}`);
    expect(await redis.llen(key)).toBe(29);
  });

  it('Ctrl+C prints the final counts and the backup path, exit 130', async () => {
    const before = await redis.llen(key);
    const ac = new AbortController();
    const t = setTimeout(() => ac.abort(), 1500);
    const r = await cli(['redrive', REDIS_URL, `list:${key}`, '--to', `list:${targetKey}`, '--rate', '4', '--batch', '1', '--yes'], ac.signal);
    clearTimeout(t);
    expect(r.code).toBe(EXIT.INTERRUPTED);
    const m = /Redrive cancelled \(client-side\): (\d+) moved, (\d+) stayed, (\d+) failed, (\d+) possible duplicates/.exec(r.stdout);
    expect(m, r.stdout + r.stderr).not.toBeNull();
    const moved = Number(m?.[1]);
    expect(moved).toBeGreaterThan(0);
    expect(moved).toBeLessThan(before);
    expect(await redis.llen(key)).toBe(before - moved);
    expect(r.stdout).toMatch(/Backup: .*\.jsonl/);

    const ac2 = new AbortController();
    const t2 = setTimeout(() => ac2.abort(), 1500);
    const j = await cli(['redrive', REDIS_URL, `list:${key}`, '--to', `list:${targetKey}`, '--rate', '4', '--batch', '1', '--yes', '--json'], ac2.signal);
    clearTimeout(t2);
    expect(j.code).toBe(EXIT.INTERRUPTED);
    const doc = JSON.parse(j.stdout) as { status: string; result: { moved: number; backupPath: string | null } };
    expect(doc.status).toBe('cancelled');
    expect(doc.result.moved).toBeGreaterThan(0);
    expect(doc.result.backupPath).toMatch(/\.jsonl$/);

    // Ctrl+C during a re-inject of that backup: it says what a re-inject leaves (old code: the
    // redrive's "the rest are still in the DLQ", which a re-inject never reads).
    const ac3 = new AbortController();
    const t3 = setTimeout(() => ac3.abort(), 1500);
    const ri = await cli(['reinject', REDIS_URL, `list:${targetKey}`, '--from', doc.result.backupPath ?? '', '--rate', '2', '--batch', '1', '--yes'], ac3.signal);
    clearTimeout(t3);
    expect(ri.code).toBe(EXIT.INTERRUPTED);
    expect(ri.stderr).toContain('messages published so far stay published, and the file is unchanged');
    expect(ri.stderr).not.toContain('still in the DLQ');
    // The summary says it was cancelled and how much of the file it read (old code: "Re-injected 3 of 3").
    expect(ri.stdout).toMatch(/^Re-inject cancelled: published \d+ of the \d+ messages? read so far \(.*\.jsonl holds \d+\)/m);
  });

  it('--file is a usage error (exit 2) for redrive and reinject, and is not in --help', async () => {
    const r = await cli(['redrive', `list:${key}`, '--file', join(dir, 'x.jsonl'), '--dry-run']);
    expect(r.code).toBe(EXIT.USAGE);
    expect(r.stderr).toContain('A snapshot file cannot be used by redrive: a snapshot file is read-only');
    const ri = await cli(['reinject', `list:${targetKey}`, '--file', join(dir, 'x.jsonl'), '--from', join(dir, 'x.jsonl'), '--yes']);
    expect(ri.code).toBe(EXIT.USAGE);
    expect(ri.stderr).toContain('A snapshot file cannot be used by reinject');
    const help = await cli(['redrive', '--help']);
    expect(help.stdout).not.toContain('--file');
    expect(help.stdout).toContain('--max-body-bytes');
    const rhelp = await cli(['reinject', '--help']);
    expect(rhelp.stdout).not.toContain('--file');
    expect(rhelp.stdout).toContain('--from');
  });
});

describe('usage errors a new user hit: guessed targets, --native with a selection, snapshot files', () => {
  const redis = new Redis(REDIS_URL);
  const base = uniqueName('rd-guess');
  const dlqKey = `${base}-dlq`;
  const snapshot = join(__dirname, '..', '..', 'resources', 'demo-snapshot.jsonl');

  beforeAll(async () => {
    await redis.xadd(dlqKey, '*', 'orderId', 'A-1');
    await redis.xadd(dlqKey, '*', 'orderId', 'A-2');
    await redis.xadd(base, '*', 'seed', '1');
  });
  afterAll(async () => {
    await redis.del(dlqKey, base);
    await redis.quit();
  });

  it('a stream target guessed from the name is not used with --yes alone (exit 2, nothing moved); --to moves', async () => {
    const dry = await cli(['redrive', REDIS_URL, `stream:${dlqKey}`, '--dry-run', '--json']);
    const plan = JSON.parse(dry.stdout) as { targets: { queueName: string; guessed?: boolean }[] };
    expect(plan.targets).toEqual([expect.objectContaining({ queueName: base, guessed: true })]);
    const r = await cli(['redrive', REDIS_URL, `stream:${dlqKey}`, '--yes']);
    expect(r.code, r.stderr).toBe(EXIT.USAGE);
    expect(r.stderr).toMatch(/only guessed from the DLQ's name.*pass --to/);
    expect(await redis.xlen(dlqKey)).toBe(2);
    const ok = await cli(['redrive', REDIS_URL, `stream:${dlqKey}`, '--to', `stream:${base}`, '--yes']);
    expect(ok.code, ok.stderr).toBe(0);
    expect(await redis.xlen(dlqKey)).toBe(0);
    expect(await redis.xlen(base)).toBe(3);
  });

  it('--to naming a list that is absent because it is empty (drained by its workers) moves there with a warning; another kind is not found', async () => {
    const src = uniqueName('rd-drained');
    const dl = `${src}-dlq`;
    try {
      await redis.rpush(dl, '{"orderId":"A-1"}', '{"orderId":"A-2"}');
      const dry = await cli(['redrive', REDIS_URL, `list:${dl}`, '--to', src, '--dry-run']);
      expect(dry.code, dry.stderr).toBe(0);
      expect(dry.stdout).toMatch(new RegExp(`would move 2:\\s+2 → list:${src}`));
      expect(dry.stdout).toMatch(/does not exist now \(Redis deletes empty lists/);
      const wrongKind = await cli(['redrive', REDIS_URL, `list:${dl}`, '--to', `stream:${src}`, '--yes']);
      expect(wrongKind.code, wrongKind.stderr).toBe(EXIT.QUEUE_NOT_FOUND);
      expect(await redis.llen(dl)).toBe(2);
      const r = await cli(['redrive', REDIS_URL, `list:${dl}`, '--to', src, '--yes']);
      expect(r.code, r.stderr).toBe(0);
      expect(await redis.lrange(src, 0, -1)).toEqual(['{"orderId":"A-1"}', '{"orderId":"A-2"}']);
      expect(await redis.exists(dl)).toBe(0);
      // The undo the result prints ("put back with: queuescope reinject …") works on the DLQ the redrive emptied.
      const backup = /Backup: (\S+\.jsonl)/.exec(r.stdout)?.[1];
      expect(backup, r.stdout).toBeDefined();
      const back = await cli(['reinject', REDIS_URL, dl, '--from', backup ?? '', '--yes']);
      expect(back.code, back.stderr).toBe(0);
      expect(back.stderr).toMatch(/does not exist now/);
      // The audit log knows the backup's redrive moved its messages: publishing them again duplicates them.
      expect(back.stderr).toMatch(/warning: the redrive that wrote this backup \(.*, completed\) moved 2 of its messages to .*: they are there already, so publishing them again makes duplicates/);
      expect(await redis.lrange(dl, 0, -1)).toEqual(['{"orderId":"A-1"}', '{"orderId":"A-2"}']);
      const again = await cli(['reinject', REDIS_URL, dl, '--from', backup ?? '', '--yes']);
      expect(again.code, again.stderr).toBe(0);
      expect(again.stderr).toMatch(/warning: this backup was already re-injected \(.*: 2 published to /);
      await redis.del(dl);
    } finally {
      await redis.del(src, dl);
    }
  });

  it('reinject from an export cut at a line boundary says it is cut and how many messages are not in it', async () => {
    // fresh-clone pass: a 6-message export cut after 2 lines re-injected "2 of 2" with exit 0 and no word
    // that 4 were missing, though inspect on the same file says Partial.
    const src = uniqueName('rd-cut');
    const dst = `${src}-back`;
    try {
      await redis.rpush(src, ...[1, 2, 3, 4, 5, 6].map((i) => `{"orderId":"C-${i}"}`));
      const file = join(dir, `${src}.jsonl`);
      const ex = await cli(['export', REDIS_URL, `list:${src}`, '--out', file]);
      expect(ex.code, ex.stderr).toBe(0);
      const lines = (await readFile(file, 'utf8')).split('\n').filter((l) => l !== '');
      expect(lines).toHaveLength(7);
      await writeFile(file, lines.slice(0, 3).map((l) => `${l}\n`).join(''));
      const r = await cli(['reinject', REDIS_URL, `list:${dst}`, '--from', file, '--yes']);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toContain(`warning: ${file} was cut: it holds 2 of the 6 messages its export wrote for ${src}; only those 2 are published, the other 4 are not in this file.`);
      expect(await redis.lrange(dst, 0, -1)).toEqual(['{"orderId":"C-1"}', '{"orderId":"C-2"}']);
      // The whole file: no such warning.
      await writeFile(file, lines.map((l) => `${l}\n`).join(''));
      await redis.del(dst);
      const whole = await cli(['reinject', REDIS_URL, `list:${dst}`, '--from', file, '--yes']);
      expect(whole.code, whole.stderr).toBe(0);
      expect(whole.stderr).not.toContain('was cut');
      expect(await redis.llen(dst)).toBe(6);
    } finally {
      await redis.del(src, dst);
    }
  });

  it('a redrive backup records its message count: inspect sees no "older Queuescope" note; cut at a line boundary, inspect and reinject say so; unfinished (killed run) reads as not finished', async () => {
    // fresh-user pass: backups had no `written` record, so a cut backup read as a smaller whole one and
    // inspect on a current backup said it was "written by an older Queuescope, or by hand".
    const src = uniqueName('rd-bkcut');
    const dl = `${src}-dlq`;
    const dst = `${src}-back`;
    try {
      await redis.rpush(dl, ...[1, 2, 3, 4, 5, 6].map((i) => `{"orderId":"B-${i}"}`));
      const r = await cli(['redrive', REDIS_URL, `list:${dl}`, '--to', src, '--yes']);
      expect(r.code, r.stderr).toBe(0);
      const backup = /Backup: (\S+\.jsonl)/.exec(r.stdout)?.[1] ?? '';
      expect(backup, r.stdout).not.toBe('');
      const lines = (await readFile(backup, 'utf8')).split('\n').filter((l) => l !== '');
      expect(lines).toHaveLength(7);
      const header = JSON.parse(lines[0] ?? '') as Record<string, unknown>;
      expect(header).toMatchObject({ type: 'queue', selection: 'ids', written: { messages: 6, section: 0, sections: 1 } });
      const whole = await cli(['inspect', backup, '--json']);
      expect(whole.code, whole.stderr).toBe(0);
      expect(whole.stdout + whole.stderr).not.toContain('older Queuescope');
      expect(whole.stdout + whole.stderr).not.toContain('was cut');
      expect(JSON.parse(whole.stdout)).toMatchObject({ analysed: 6, partialReason: `The snapshot is a redrive backup of ${dl}: it holds the 6 messages that redrive moved (or tried to), not the whole queue.` });

      // Cut after 2 messages: inspect and reinject say it is cut, and how many are not in it.
      await writeFile(backup, lines.slice(0, 3).map((l) => `${l}\n`).join(''));
      const ins = await cli(['inspect', backup]);
      expect(ins.stderr + ins.stdout).toContain('The file was cut: it holds 2 of the 6 messages the redrive wrote for this queue');
      const back = await cli(['reinject', REDIS_URL, `list:${dst}`, '--from', backup, '--yes']);
      expect(back.code, back.stderr).toBe(0);
      expect(back.stderr).toContain(`warning: ${backup} was cut: it holds 2 of the 6 messages its redrive wrote for ${dl}; only those 2 are published, the other 4 are not in this file.`);
      expect(await redis.lrange(dst, 0, -1)).toEqual(['{"orderId":"B-1"}', '{"orderId":"B-2"}']);

      // The header as a killed run leaves it (never closed: written null): not finished, said as such.
      await writeFile(backup, [JSON.stringify({ ...header, written: null }), ...lines.slice(1)].map((l) => `${l}\n`).join(''));
      const insK = await cli(['inspect', backup]);
      expect(insK.stderr + insK.stdout).toContain('The backup was not finished: the redrive that wrote it did not end (killed, crashed, or still running)');
      await redis.del(dst);
      const backK = await cli(['reinject', REDIS_URL, `list:${dst}`, '--from', backup, '--yes']);
      expect(backK.code, backK.stderr).toBe(0);
      expect(backK.stderr).toContain(`warning: ${backup} was not finished: the redrive of ${dl} that wrote it did not end (killed, crashed, or still running; its header has no message count), so the 6 messages it holds are those the run read before it stopped`);
      expect(backK.stderr).not.toContain('the rest are not published');
      expect(await redis.llen(dst)).toBe(6);
    } finally {
      await redis.del(src, dl, dst);
    }
  });

  it('reinject of the backup of a redrive killed mid-run (no end in the audit log) warns that its messages may be in the target already', async () => {
    // fresh-clone pass: SIGKILL after 100 of 500 moved, then reinject into the target: 100 duplicates with
    // no warning — only an ended run's `moved` count was looked at, and a killed run has none.
    const src = uniqueName('rd-killed');
    const dl = `${src}-dlq`;
    try {
      await redis.rpush(dl, '{"orderId":"K-1"}', '{"orderId":"K-2"}');
      const r = await cli(['redrive', REDIS_URL, `list:${dl}`, '--to', src, '--yes']);
      expect(r.code, r.stderr).toBe(0);
      const backup = /Backup: (\S+\.jsonl)/.exec(r.stdout)?.[1] ?? '';
      expect(backup, r.stdout).not.toBe('');
      // What the log holds when the process is killed after the moves: the run's "started" entry, no end.
      const logPath = join(home, 'audit-log.jsonl');
      const lines = (await readFile(logPath, 'utf8')).split('\n').filter((l) => l !== '');
      const ofRun = lines.filter((l) => (JSON.parse(l) as { backupPath: string | null }).backupPath === backup);
      expect(ofRun.map((l) => (JSON.parse(l) as { status: string }).status)).toEqual(['started', 'completed']);
      await writeFile(logPath, lines.filter((l) => l !== ofRun[1]).map((l) => `${l}\n`).join(''));
      const back = await cli(['reinject', REDIS_URL, src, '--from', backup, '--yes']);
      expect(back.code, back.stderr).toBe(0);
      expect(back.stderr).toMatch(new RegExp(`warning: the redrive that wrote this backup \\(.*\\) has no end recorded \\(killed, crashed, or still running\\): any of its messages may have moved to list:${src} already`));
      expect(await redis.lrange(src, 0, -1)).toEqual(['{"orderId":"K-1"}', '{"orderId":"K-2"}', '{"orderId":"K-1"}', '{"orderId":"K-2"}']);
    } finally {
      await redis.del(src, dl);
    }
  });

  it('--native with --filter / --ids / --dedupe-by-key is a usage error before anything is read', async () => {
    for (const extra of [['--filter', 'class:transient'], ['--ids', 'x'], ['--dedupe-by-key']]) {
      const r = await cli(['redrive', REDIS_URL, `stream:${dlqKey}`, '--to', `stream:${base}`, '--native', '--yes', ...extra]);
      expect(r.code, r.stderr).toBe(EXIT.USAGE);
      expect(r.stderr).toMatch(/--native moves the whole DLQ inside the broker/);
    }
  });

  it('a snapshot file as the connection of redrive, reinject or audit is a usage error (exit 2)', async () => {
    const rd = await cli(['redrive', snapshot, 'orders.dlq', '--dry-run']);
    expect(rd.code, rd.stderr).toBe(EXIT.USAGE);
    expect(rd.stderr).toMatch(/A snapshot file cannot be used by redrive/);
    const au = await cli(['audit', '--file', snapshot]);
    expect(au.code, au.stderr).toBe(EXIT.USAGE);
    expect(au.stderr).toMatch(/A snapshot file cannot be used by audit/);
    const au2 = await cli(['audit', snapshot]);
    expect(au2.code, au2.stderr).toBe(EXIT.USAGE);
    expect((await cli(['audit', '--help'])).stdout).not.toContain('--file');
  });

  it('audit --list-rules --json prints the rule catalog as JSON', async () => {
    const r = await cli(['audit', '--list-rules', '--json']);
    expect(r.code).toBe(0);
    const rules = JSON.parse(r.stdout) as { id: string; severity: string; docUrl: string }[];
    expect(rules.length).toBeGreaterThanOrEqual(27);
    expect(rules.find((x) => x.id === 'sqs.no-redrive-policy')).toMatchObject({ severity: 'error' });
  });
});

describe('SQS calls sharing one operation signal (fauxqs)', () => {
  const sqs = new SQSClient({ region: SQS_REGION, endpoint: SQS_ENDPOINT, credentials: { ...SQS_TEST_CREDENTIALS } });
  const prefix = uniqueName('rd-listeners');
  const urls: string[] = [];
  beforeAll(async () => {
    for (let i = 0; i < 24; i++) urls.push((await sqs.send(new CreateQueueCommand({ QueueName: `${prefix}-${i}` }))).QueueUrl ?? '');
  });
  afterAll(async () => {
    for (const u of urls) await sqs.send(new DeleteQueueCommand({ QueueUrl: u })).catch(() => undefined);
    sqs.destroy();
  });

  it('listQueues (16 GetQueueAttributes at once) keeps at most one abort listener on the signal, and no warning', async () => {
    const adapter = createSqsAdapter({ kind: 'sqs', region: SQS_REGION, endpoint: SQS_ENDPOINT, ...SQS_TEST_CREDENTIALS });
    const warnings: string[] = [];
    const onWarning = (w: Error): void => void warnings.push(w.name);
    process.on('warning', onWarning);
    const ac = new AbortController();
    let max = 0;
    const iv = setInterval(() => (max = Math.max(max, getEventListeners(ac.signal, 'abort').length)), 1);
    try {
      for (let k = 0; k < 3; k++) expect((await adapter.listQueues({ pattern: `${prefix}-*` }, ac.signal)).length).toBe(24);
    } finally {
      clearInterval(iv);
      process.off('warning', onWarning);
      await adapter.close();
    }
    expect(max).toBeGreaterThan(0);
    expect(max).toBeLessThanOrEqual(1);
    expect(warnings).not.toContain('MaxListenersExceededWarning');
  });
});

/**
 * `--rate N` is "at most N messages per second": samples the target's depth every 20 ms during a
 * run and checks that no 1-second window saw more than N + one batch (the token bucket holds at
 * most one batch, ceil(N)) — a fresh user saw 15 of a `--rate 5` run arrive within 40 ms on
 * RabbitMQ (batches read ahead passed the gate before earlier ones were charged).
 */
describe('--rate N: no burst beyond one batch', () => {
  const RATE = 5;
  const N = 15;

  async function sampleWhile(run: Promise<Run>, depth: () => Promise<number>): Promise<{ run: Run; samples: { t: number; n: number }[] }> {
    const samples: { t: number; n: number }[] = [];
    let done = false;
    const finished = run.finally(() => {
      done = true;
    });
    const t0 = performance.now();
    while (!done) {
      samples.push({ t: performance.now() - t0, n: await depth() });
      await new Promise((r) => setTimeout(r, 20));
    }
    samples.push({ t: performance.now() - t0, n: await depth() });
    return { run: await finished, samples };
  }

  function maxInOneSecond(samples: { t: number; n: number }[]): number {
    let max = 0;
    for (const a of samples) {
      for (const b of samples) if (b.t > a.t && b.t - a.t <= 1000) max = Math.max(max, b.n - a.n);
    }
    return max;
  }

  it('RabbitMQ and a Redis list: at most N + one batch arrive in any second, and the run takes about N/rate seconds', async () => {
    const redis = new Redis(REDIS_URL);
    const conn = await amqp.connect(AMQP_URL);
    const ch = await conn.createChannel();
    const [rdlq, rtarget] = [uniqueName('rd-rate-dlq'), uniqueName('rd-rate-work')];
    const [ldlq, ltarget] = [uniqueName('rd-rate-ldlq'), uniqueName('rd-rate-lwork')];
    try {
      await ch.assertQueue(rdlq, { durable: false });
      await ch.assertQueue(rtarget, { durable: false });
      for (let i = 0; i < N; i++) ch.sendToQueue(rdlq, Buffer.from(`{"orderId":"A-${i}"}`));
      await redis.rpush(ldlq, ...Array.from({ length: N }, (_, i) => `{"orderId":"A-${i}"}`));
      await redis.rpush(ltarget, 'seed');
      for (let i = 0; i < 50 && (await ch.checkQueue(rdlq)).messageCount < N; i++) await new Promise((r) => setTimeout(r, 20));

      const rabbit = await sampleWhile(
        cli(['redrive', AMQP_URL, rdlq, '--to', rtarget, '--rate', String(RATE), '--no-native', '--include-non-retryable', '--yes']),
        async () => (await ch.checkQueue(rtarget)).messageCount,
      );
      const list = await sampleWhile(cli(['redrive', REDIS_URL, `list:${ldlq}`, '--to', `list:${ltarget}`, '--rate', String(RATE), '--include-non-retryable', '--yes']), async () => (await redis.llen(ltarget)) - 1);
      for (const [name, r] of [['RabbitMQ', rabbit], ['Redis list', list]] as const) {
        expect(r.run.code, `${name}: ${r.run.stderr}`).toBe(0);
        expect(r.samples[r.samples.length - 1]?.n, name).toBe(N);
        expect(maxInOneSecond(r.samples), `${name}: ${JSON.stringify(r.samples.filter((s, i, a) => i === 0 || s.n !== a[i - 1]?.n))}`).toBeLessThanOrEqual(2 * RATE);
        // The bucket starts empty: N messages take at least (N / rate) − a little.
        expect(r.samples[r.samples.length - 1]?.t ?? 0, name).toBeGreaterThan(((N / RATE) - 0.5) * 1000);
      }
    } finally {
      await ch.deleteQueue(rdlq).catch(() => undefined);
      await ch.deleteQueue(rtarget).catch(() => undefined);
      await conn.close().catch(() => undefined);
      await redis.del(ldlq, ltarget);
      await redis.quit();
    }
  }, 60_000);
});

describe('whole-DLQ redrive where some messages stay (RabbitMQ: the native pre-pass, then client-side)', () => {
  it('the reasons for staying add up to the messages that stayed (the pre-pass is not counted twice); the result names the mode that ran', async () => {
    const conn = await amqp.connect(AMQP_URL);
    const ch = await conn.createConfirmChannel();
    const [dlq, target] = [uniqueName('rd-twice-dlq'), uniqueName('rd-twice-work')];
    try {
      await ch.assertQueue(dlq, { durable: false });
      await ch.assertQueue(target, { durable: false });
      for (let i = 0; i < 10; i++) ch.sendToQueue(dlq, Buffer.from(`{"orderId":"A-${i}"}`), { headers: i < 2 ? { 'x-last-error': 'HTTP 422' } : {} });
      await ch.waitForConfirms();
      const r = await cli(['redrive', AMQP_URL, dlq, '--to', target, '--yes', '--json']);
      expect(r.code, r.stderr).toBe(0);
      const doc = JSON.parse(r.stdout) as { result: { mode: string; moved: number; skipped: number; skipReasons: { reason: string; count: number }[]; notes: string[] } };
      expect(doc.result).toMatchObject({ mode: 'client-side', moved: 8, skipped: 2 });
      expect(doc.result.skipReasons).toEqual([expect.objectContaining({ count: 2 })]);
      expect(doc.result.notes.join(' ')).toMatch(/native move not used/);
      expect((await ch.checkQueue(target)).messageCount).toBe(8);
    } finally {
      await ch.deleteQueue(dlq).catch(() => undefined);
      await ch.deleteQueue(target).catch(() => undefined);
      await conn.close().catch(() => undefined);
    }
  });
});

describe('picked ids and empty names', () => {
  it('counts every picked id that was not found (the list shows the first ones); --to "" is a usage error', async () => {
    const redis = new Redis(REDIS_URL);
    const key = uniqueName('rd-ids-dlq');
    try {
      await redis.rpush(key, '{"orderId":"A-1"}');
      const ids = Array.from({ length: 1500 }, (_, i) => `missing-${String(i)}`).join(',');
      const r = await cli(['redrive', REDIS_URL, `list:${key}`, '--to', `list:${key}-work`, '--ids', ids, '--dry-run']);
      expect(r.stdout).toMatch(/warning: 1500 picked ids were not found in the DLQ: missing-0, .* \(first 50 listed\)/);
      const j = JSON.parse((await cli(['redrive', REDIS_URL, `list:${key}`, '--to', `list:${key}-work`, '--ids', ids, '--dry-run', '--json'])).stdout) as { notFoundCount: number; notFoundIds: string[] };
      expect(j.notFoundCount).toBe(1500);
      expect(j.notFoundIds.length).toBeLessThan(1500);
      const empty = await cli(['redrive', REDIS_URL, `list:${key}`, '--to', '', '--dry-run']);
      expect(empty.code).toBe(EXIT.USAGE);
      expect(empty.stderr).toContain('An empty queue name was given');
    } finally {
      await redis.del(key);
      await redis.quit();
    }
  });
});

describe('nothing can move', () => {
  it('messages with no target: "Nothing moved", the hint to pass --to, exit 7 (not "Nothing to move", exit 0)', async () => {
    const conn = await amqp.connect(AMQP_URL);
    const ch = await conn.createConfirmChannel();
    const dlq = uniqueName('rd-notarget-dlq');
    try {
      await ch.assertQueue(dlq, { durable: false });
      for (let i = 0; i < 2; i++) ch.sendToQueue(dlq, Buffer.from(`{"orderId":"A-${i}"}`)); // no x-death: the source cannot be told
      await ch.waitForConfirms();
      const r = await cli(['redrive', AMQP_URL, dlq, '--yes', '--no-native']);
      expect(r.code, r.stderr).toBe(EXIT.PARTIAL);
      expect(r.stdout).toMatch(/Nothing moved: 2 have no usable target \(pass --to QUEUE to choose one\)/);
      expect((await ch.checkQueue(dlq)).messageCount).toBe(2);
    } finally {
      await ch.deleteQueue(dlq).catch(() => undefined);
      await conn.close().catch(() => undefined);
    }
  });
});

import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { createRedisAdapter, type RedisAdapter } from '../../core/adapters/redis';
import { readQueue } from '../../core/inspect/read';
import { exportQueue } from '../../core/services/export';
import type { InspectReport } from '../../shared/api/inspect';
import type { PeekOptions, PeekPage, QueueMessage } from '../../shared/domain';
import { REDIS_URL, uniqueName } from './env';
import { runCli, type CliRun } from './fixtures/run-cli';

/**
 * Reading a plain Redis list page by page while workers pop and push it (fresh-user pass: LRANGE
 * offsets shifted under the read, which then skipped or repeated entries and still reported a
 * complete read). Every test checks the one thing a user relies on during an incident: each entry
 * that stayed in the list is read exactly once, or the read says it may not have been.
 *
 * A second ioredis connection plays the workers: between pages (deterministic, adapter level), or
 * in a loop while the CLI reads (the way it happens in production).
 */

const native = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
const adapters: RedisAdapter[] = [];
const keys: string[] = [];
let dir: string;

function adapter(): RedisAdapter {
  const a = createRedisAdapter({ kind: 'redis', url: REDIS_URL });
  adapters.push(a);
  return a;
}

/** A fresh list `key` of `n` entries `<tag>-0` … `<tag>-(n-1)`, index 0 = `<tag>-0`. */
async function seedList(label: string, n: number, tag = 'orig'): Promise<{ key: string; originals: string[] }> {
  const key = uniqueName(`list-paging-${label}`);
  keys.push(key);
  const originals = Array.from({ length: n }, (_, i) => JSON.stringify({ orderId: `${tag}-${String(i)}`, operation: 'charge' }));
  for (let i = 0; i < n; i += 500) await native.rpush(key, ...originals.slice(i, i + 500));
  return { key, originals };
}

const bodyOf = (m: QueueMessage): string => m.body.data;

/** Every count > 1 in `xs`. */
function repeated(xs: string[]): string[] {
  const seen = new Map<string, number>();
  for (const x of xs) seen.set(x, (seen.get(x) ?? 0) + 1);
  return [...seen].filter(([, c]) => c > 1).map(([x]) => x);
}

/** Pages through `queueId`, calling `between` after every page; returns the bodies and the pages. */
async function readAll(a: RedisAdapter, queueId: string, opts: Partial<PeekOptions>, limit: number, between: (page: number) => Promise<void>): Promise<{ bodies: string[]; pages: PeekPage[] }> {
  const bodies: string[] = [];
  const pages: PeekPage[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 1000; i++) {
    const page = await a.peek(queueId, { ...opts, limit, cursor });
    pages.push(page);
    bodies.push(...page.messages.map(bodyOf));
    cursor = page.nextCursor;
    if (cursor === null) break;
    await between(i);
  }
  return { bodies, pages };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qs-list-paging-'));
});

afterAll(async () => {
  for (const a of adapters) await a.close();
  if (keys.length > 0) await native.del(...keys);
  native.disconnect();
  await rm(dir, { recursive: true, force: true });
});

describe('a list popped and pushed between pages (adapter, deterministic)', () => {
  it('FIFO consumer popping the end read from (RPUSH + LPOP/LMOVE): re-aligned, every entry read once, in order', async () => {
    const { key, originals } = await seedList('fifo', 3000);
    const done = uniqueName('list-paging-done');
    keys.push(done);
    const a = adapter();
    const { bodies, pages } = await readAll(a, `list:${key}`, {}, 100, async (i) => {
      // Workers take 30 from the head (already read: the reader is ahead), one via LMOVE, and a producer adds 10.
      await native.lpop(key, 29);
      await native.lmove(key, done, 'LEFT', 'RIGHT');
      await native.rpush(key, ...Array.from({ length: 10 }, (_, j) => JSON.stringify({ orderId: `new-${String(i)}-${String(j)}` })));
    });
    const read = bodies.filter((b) => b.includes('"orig-'));
    // Old code: every page after the first skipped the 30 entries that slid under its offset.
    expect(read).toEqual(originals);
    expect(repeated(bodies)).toEqual([]);
    const moves = pages.map((p) => p.moved).filter((m) => m !== undefined);
    expect(moves.length).toBeGreaterThan(0);
    expect(moves.every((m) => m.realigned)).toBe(true);
    expect(moves[0]?.note).toMatch(/re-aligned on the last entry read/);
    // Positions count what was returned, across pages.
    expect(pages.flatMap((p) => p.messages.map((m) => m.position))).toEqual(bodies.map((_, i) => i));
  });

  it('Sidekiq-style LPUSH producer + RPOP consumer, read from the left: no entry read twice, the rest were consumed', async () => {
    const { key, originals } = await seedList('lifo', 3000);
    const a = adapter();
    const popped = new Set<string>();
    const { bodies, pages } = await readAll(a, `list:${key}`, {}, 100, async (i) => {
      await native.lpush(key, ...Array.from({ length: 40 }, (_, j) => JSON.stringify({ orderId: `new-${String(i)}-${String(j)}` })));
      for (const v of (await native.rpop(key, 15)) ?? []) popped.add(v);
    });
    const read = bodies.filter((b) => b.includes('"orig-'));
    // Old code: each page re-read the 40 entries pushed in front of its offset (and never reached the tail).
    expect(repeated(read)).toEqual([]);
    // Every original was read or consumed (a read-ahead page may have read some just before they were popped), in list order.
    const got = new Set(read);
    expect(originals.filter((o) => !got.has(o) && !popped.has(o))).toEqual([]);
    expect(read).toEqual(originals.filter((o) => got.has(o)));
    expect(pages.some((p) => p.moved?.realigned === true)).toBe(true);
    expect(pages.some((p) => p.moved?.realigned === false)).toBe(false);
  });

  it('reading the newest end while a producer RPUSHes: re-aligned from the right too', async () => {
    const { key, originals } = await seedList('newest', 1000);
    const a = adapter();
    const { bodies } = await readAll(a, `list:${key}`, { direction: 'newest' }, 64, async (i) => {
      await native.rpush(key, ...Array.from({ length: 25 }, (_, j) => JSON.stringify({ orderId: `new-${String(i)}-${String(j)}` })));
    });
    expect(bodies.filter((b) => b.includes('"orig-'))).toEqual([...originals].reverse());
  });

  it('identical entries around the last one read: the page cannot tell where it is, repeats rather than skips, and says so', async () => {
    const key = uniqueName('list-paging-same');
    keys.push(key);
    await native.rpush(key, ...Array.from({ length: 300 }, () => 'same'));
    const a = adapter();
    const first = await a.peek(`list:${key}`, { limit: 100 });
    await native.lpush(key, 'new');
    const second = await a.peek(`list:${key}`, { limit: 100, cursor: first.nextCursor });
    expect(second.moved?.realigned).toBe(false);
    expect(second.moved?.uncertain).toBeGreaterThan(0);
    expect(second.moved?.note).toMatch(/may have been read twice: .*identical contents/);
  });

  it('a consumer that overtook the reader: the page says entries may be skipped or read twice, and readQueue/export are partial', async () => {
    const { key } = await seedList('overtaken', 2000);
    const a = adapter();
    const first = await a.peek(`list:${key}`, { limit: 100 });
    // A worker drains 400 from the head: the last entry read is gone.
    await native.lpop(key, 400);
    const second = await a.peek(`list:${key}`, { limit: 100, cursor: first.nextCursor });
    expect(second.moved).toMatchObject({ realigned: false, uncertain: null });
    expect(second.moved?.note).toMatch(/may have been skipped or read twice: the last entry read .* is no longer within \d+ positions/);
    // From the head again: nothing still in the list is skipped.
    expect(second.messages[0]?.body.data).toContain('"orig-400"');

    // The same through readQueue (inspect) and exportQueue, with the worker popping after the first page.
    const queue = await a.getQueue(`list:${key}`);
    let pages = 0;
    const r = await readQueue(a, queue, {
      pageSize: 100,
      checkpoint: async () => {
        // Before the second page (the first read with a cursor, so no read-ahead page was read yet).
        if (pages++ === 1) await native.lpop(key, 300);
      },
    }, () => undefined);
    expect(r.partial).toBe(true);
    expect(r.partialReason).toMatch(/skipped or read twice.*no longer within \d+ positions/);
    expect(r.notes?.join(' ')).toMatch(/skipped or read twice/);
    const before = await native.llen(key);
    const out = join(dir, 'overtaken.jsonl');
    let n = 0;
    const res = await exportQueue(a, `list:${key}`, { path: out, pageSize: 100 }, {
      signal: new AbortController().signal,
      setTotal: () => undefined,
      report: () => undefined,
      checkpoint: async () => {
        // Before the second page: a worker takes the first 300 (the first page's 100 and 200 unread).
        if (n++ === 1) await native.lpop(key, 300);
      },
    });
    expect(res.partial).toBe(true);
    expect(res.reason).toMatch(/skipped or read twice/);
    expect(res.notes?.join(' ')).toMatch(/skipped or read twice/);
    expect(res.messages).toBeLessThan(before);
    // The file itself says so (its header was written before the messages, and is rewritten at the end).
    const header = JSON.parse((await readFile(out, 'utf8')).split('\n')[0] ?? '') as { partial?: boolean; partialReason?: string };
    expect(header.partial).toBe(true);
    expect(header.partialReason).toMatch(/skipped or read twice/);
  });
});

describe('the CLI while workers push and pop in the background', () => {
  const run = (argv: string[]): Promise<CliRun> => runCli(dir, argv);

  /** Another connection that pushes (and pops, when asked) every few ms until stopped. */
  function churn(key: string, o: { push: 'left' | 'right'; pop?: 'left' | 'right' }): { stop: () => Promise<void>; popped: Set<string> } {
    const worker = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    const popped = new Set<string>();
    let running = true;
    let i = 0;
    const loop = (async (): Promise<void> => {
      while (running) {
        const fresh = Array.from({ length: 5 }, () => JSON.stringify({ orderId: `new-${String(i++)}`, operation: 'charge' }));
        await (o.push === 'left' ? worker.lpush(key, ...fresh) : worker.rpush(key, ...fresh));
        if (o.pop !== undefined) for (const v of (await (o.pop === 'left' ? worker.lpop(key, 2) : worker.rpop(key, 2))) ?? []) popped.add(v);
        await new Promise((r) => setTimeout(r, 2));
      }
    })();
    return {
      popped,
      stop: async () => {
        running = false;
        await loop;
        worker.disconnect();
      },
    };
  }

  it('inspect --fail-on flag reads each entry once while a producer LPUSHes in front of the read, and says it re-aligned', async () => {
    const { key, originals } = await seedList('cli-inspect', 4000);
    const hashes = new Map(originals.map((o) => [createHashHex(o), o]));
    const worker = churn(key, { push: 'left' });
    let r: CliRun;
    try {
      r = await run(['inspect', REDIS_URL, key, '--json', '--rows', '100000', '--fail-on', 'flag']);
    } finally {
      await worker.stop();
    }
    const report = JSON.parse(r.stdout) as InspectReport;
    const read = report.messages.map((m) => hashes.get(m.id.slice(m.id.indexOf('~') + 1))).filter((x): x is string => x !== undefined);
    if (r.code === 9) {
      // Moved farther than the window between two pages: allowed, but only when said.
      expect(report.partial).toBe(true);
      expect(report.partialReason).toMatch(/skipped or read twice/);
    } else {
      // Old code: the pushes slid read entries under later pages (read twice) and the tail was never reached; exit 0.
      expect(r.code).toBe(0);
      expect(repeated(read)).toEqual([]);
      expect(read).toEqual(originals);
      expect(report.partial).toBe(false);
      expect(report.notes?.join(' ')).toMatch(/re-aligned on the last entry read/);
    }
    // Human output: the note goes to stderr.
    const { key: small } = await seedList('cli-inspect-human', 1500);
    const worker2 = churn(small, { push: 'left' });
    let h: CliRun;
    try {
      h = await run(['inspect', REDIS_URL, small]);
    } finally {
      await worker2.stop();
    }
    expect(h.stderr).toMatch(/note: .*moved .*re-aligned on the last entry read/);
  });

  it('inspect --fail-on flag exits 9 and says on stderr that entries may be skipped when a worker consumed past the read', async () => {
    const { key } = await seedList('cli-overtaken', 4000);
    // As soon as the CLI has read its first page, a worker takes 3000 from the head (past anything read by then).
    const monitor = await native.duplicate().monitor();
    let fired = false;
    const popped = new Promise<void>((resolve) => {
      monitor.on('monitor', (_time: string, args: string[]) => {
        if (fired || args[0]?.toLowerCase() !== 'lrange' || args[1] !== key) return;
        fired = true;
        void native.lpop(key, 3000).then(() => resolve());
      });
    });
    let r: CliRun;
    try {
      r = await run(['inspect', REDIS_URL, key, '--fail-on', 'flag']);
      await popped;
    } finally {
      monitor.disconnect();
    }
    // Old code: exit 9 too (it read fewer than the queue held), but only as 'the queue changed while it was read'.
    expect(r.code).toBe(9);
    expect(r.stderr).toMatch(/note: The list .* may have been skipped or read twice: the last entry read .* is no longer within \d+ positions/);
    expect(r.stderr).toMatch(/fail-on flag: nothing flagged .* skipped or read twice.* Exit 9 \(incomplete\)/s);
    expect(r.stdout).toMatch(/Partial: .*skipped or read twice/);
  });

  it('export while a Sidekiq-style worker LPUSHes and RPOPs: every entry in the file once or consumed, or the export says it is partial', async () => {
    const { key, originals } = await seedList('cli-export', 3000);
    const worker = churn(key, { push: 'left', pop: 'right' });
    const out = join(dir, 'cli-export.jsonl');
    let r: CliRun;
    try {
      r = await run(['export', REDIS_URL, key, '--out', out, '--page-size', '100']);
    } finally {
      await worker.stop();
    }
    // A partial export exits 7 (it said so on stderr and exited 0 before).
    expect(r.code).toBe(/warning: the export is partial/.test(r.stderr) ? 7 : 0);
    const lines = (await readFile(out, 'utf8')).split('\n').filter((l) => l !== '');
    const bodies = lines.slice(1).map((l) => (JSON.parse(l) as QueueMessage).body.data);
    const read = bodies.filter((b) => b.includes('"orig-'));
    if (/skipped or read twice/.test(r.stderr)) {
      expect(r.stderr).toMatch(/warning: the export is partial/);
    } else {
      // Old code: entries pushed in front of the offset were written again (and the count cutoff then cut the tail).
      expect(repeated(read)).toEqual([]);
      const got = new Set(read);
      expect(originals.filter((o) => !got.has(o) && !worker.popped.has(o))).toEqual([]);
      expect(read).toEqual(originals.filter((o) => got.has(o)));
    }
    if (read.length < originals.length) expect(r.stderr).toMatch(/warning: the export is partial: .*consumed or removed before they were read/s);
  });
});

function createHashHex(s: string): string {
  return createHash('sha1').update(s).digest('hex').slice(0, 8);
}

import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { QueueMessage, QueueSummary } from '../../shared/domain';
import { formatMessageLine, isSnapshotLineTooLong, MAX_SNAPSHOT_LINE_BYTES } from './format';
import { readSnapshotFile } from './reader';
import { SnapshotWriter } from './writer';

const queue: QueueSummary = {
  id: 'list:jobs', name: 'jobs', broker: 'redis', kind: 'redis-list', depth: 2, inFlight: null, delayed: null, consumers: null, counts: {}, deadLetterTargets: [], deadLetterSources: [], isDeadLetterQueue: false,
  capabilities: { canPeekNonDestructively: true, peekSideEffects: [], peekMayDeadLetter: false, canPageFromCursor: true, maxPeekWindow: 1000, peekStates: [] }, config: {},
};
const m = (i: number): QueueMessage => ({
  id: String(i), queueId: queue.id, queueName: queue.name, position: i, body: { encoding: 'utf8', data: `body ${i} ${'x'.repeat(500)}`, sizeBytes: 507, truncated: false }, headers: {}, properties: {}, meta: {},
});

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qs-writer-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('SnapshotWriter', () => {
  it('writes to <path>.partial and only renames on finish', async () => {
    const path = join(dir, 'out.jsonl');
    const w = await SnapshotWriter.create(path);
    await w.writeHeader({ exportedAt: 1, source: { broker: 'redis', connection: 'redis://h:6379', queue } });
    for (let i = 0; i < 2000; i++) await w.writeMessage(m(i)); // > 256 KiB: some data already flushed
    expect((await readdir(dir)).sort()).toEqual(['out.jsonl.partial']);
    const r = await w.finish();
    expect(await readdir(dir)).toEqual(['out.jsonl']);
    expect(r).toMatchObject({ path, messages: 2000, sections: 1 });
    expect(r.bytes).toBe((await readFile(path)).length);
    const sections = await readSnapshotFile(path);
    expect(sections[0]?.messages.map((x) => x.id)).toEqual(Array.from({ length: 2000 }, (_, i) => String(i)));
  });

  it('abort and cancellation leave nothing under either name', async () => {
    const path = join(dir, 'out.jsonl');
    const w = await SnapshotWriter.create(path);
    await w.writeHeader({ exportedAt: 1, source: { broker: 'redis', connection: 'c', queue } });
    for (let i = 0; i < 1000; i++) await w.writeMessage(m(i));
    await w.abort();
    expect(await readdir(dir)).toEqual([]);

    const ac = new AbortController();
    const w2 = await SnapshotWriter.create(path);
    await w2.writeHeader({ exportedAt: 1, source: { broker: 'redis', connection: 'c', queue } });
    ac.abort();
    await expect(w2.writeMessage(m(1), ac.signal)).rejects.toMatchObject({ code: 'CANCELLED' });
    await expect(w2.finish(ac.signal)).rejects.toMatchObject({ code: 'CANCELLED' });
    expect(await readdir(dir)).toEqual([]);
  });

  it('refuses to replace an existing file unless overwrite is set', async () => {
    const path = join(dir, 'out.jsonl');
    await writeFile(path, 'keep me');
    await expect(SnapshotWriter.create(path)).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    expect(await readFile(path, 'utf8')).toBe('keep me');
    const w = await SnapshotWriter.create(path, { overwrite: true });
    await w.writeHeader({ exportedAt: 1, source: { broker: 'redis', connection: 'c', queue } });
    await w.finish();
    expect(await readFile(path, 'utf8')).toMatch(/^\{"type":"queue"/);
  });

  it('a missing folder is INVALID_INPUT naming the path', async () => {
    await expect(SnapshotWriter.create(join(dir, 'nope', 'x.jsonl'))).rejects.toMatchObject({ code: 'INVALID_INPUT', message: expect.stringContaining('folder does not exist') });
  });

  it('writes gzip for .gz paths, readable by the reader', async () => {
    const path = join(dir, 'out.jsonl.gz');
    const w = await SnapshotWriter.create(path);
    await w.writeHeader({ exportedAt: 1, source: { broker: 'redis', connection: 'c', queue } });
    for (let i = 0; i < 1500; i++) await w.writeMessage(m(i));
    const r = await w.finish();
    const raw = await readFile(path);
    expect([raw[0], raw[1]]).toEqual([0x1f, 0x8b]);
    expect(r.bytes).toBeLessThan(1500 * 500); // compressed
    const sections = await readSnapshotFile(path);
    expect(sections[0]?.messages).toHaveLength(1500);
    expect(sections[0]?.messages[1499]?.id).toBe('1499');
  });

  it('amendFirstHeader marks a streamed file partial at finish, plain and gzip, after several flushes', async () => {
    for (const name of ['amend.jsonl', 'amend.jsonl.gz', 'small.jsonl.gz']) {
      const path = join(dir, name);
      const n = name.startsWith('small') ? 3 : 2000; // 2000 × ~600 B: several 256 KiB flushes before the amendment
      const w = await SnapshotWriter.create(path);
      const header = { exportedAt: 1, source: { broker: 'redis' as const, connection: 'c', queue } };
      await w.writeHeader(header);
      for (let i = 0; i < n; i++) await w.writeMessage(m(i));
      w.amendFirstHeader({ ...header, partial: true, partialReason: 'The list moved: entries may have been skipped or read twice.' });
      const r = await w.finish();
      expect(await readdir(dir)).not.toContain(`${name}.partial.amend`);
      expect(r.bytes).toBe((await readFile(path)).length);
      const sections = await readSnapshotFile(path);
      expect(sections).toHaveLength(1);
      expect(sections[0]?.header).toMatchObject({ partial: true, partialReason: 'The list moved: entries may have been skipped or read twice.' });
      expect(sections[0]?.messages.map((x) => x.id)).toEqual(Array.from({ length: n }, (_, i) => String(i)));
      expect(sections[0]?.messages[n - 1]).toEqual(m(n - 1));
    }
  });

  it('records what it wrote in every header (written: messages, section, sections), plain and gzip, with the amended first header too', async () => {
    for (const name of ['counts.jsonl', 'counts.jsonl.gz', 'amended.jsonl.gz']) {
      const path = join(dir, name);
      const w = await SnapshotWriter.create(path);
      const header = { exportedAt: 1, source: { broker: 'redis' as const, connection: 'c', queue } };
      await w.writeHeader(header);
      for (let i = 0; i < 1200; i++) await w.writeMessage(m(i)); // several flushes before the next header
      await w.writeHeader({ ...header, state: 'second' });
      for (let i = 0; i < 3; i++) await w.writeMessage(m(i));
      await w.writeHeader({ ...header, state: 'empty' });
      if (name.startsWith('amended')) w.amendFirstHeader({ ...header, partial: true, partialReason: 'moved' });
      await w.finish();
      const sections = await readSnapshotFile(path);
      expect(sections.map((x) => x.header.written)).toEqual([
        { messages: 1200, section: 0, sections: 3 },
        { messages: 3, section: 1, sections: 3 },
        { messages: 0, section: 2, sections: 3 },
      ]);
      expect(sections.map((x) => x.messages.length)).toEqual([1200, 3, 0]);
      if (name.startsWith('amended')) expect(sections[0]?.header).toMatchObject({ partial: true, partialReason: 'moved' });
      if (!name.endsWith('.gz')) {
        // Written in place: the first line keeps the length it was written with (padded with spaces).
        const first = (await readFile(path, 'utf8')).split('\n')[0] ?? '';
        expect(first).toMatch(/"written":\{"messages":1200,"section":0,"sections":3\} +\}$/);
      }
    }
  });

  it('a header copied before finish says written: null (the writer never finished)', async () => {
    const path = join(dir, 'unfinished.jsonl');
    const w = await SnapshotWriter.create(path);
    await w.writeHeader({ exportedAt: 1, source: { broker: 'redis', connection: 'c', queue } });
    await w.writeMessage(m(0));
    const copy = join(dir, 'copy.jsonl');
    await writeFile(copy, await readFile(`${path}.partial`));
    await w.abort();
    const sections = await readSnapshotFile(copy);
    expect(sections[0]?.header.written).toBeNull();
  });

  it('writes a line of exactly the readers\' limit (it reads back) and refuses one byte more, staying usable', async () => {
    const path = join(dir, 'limit.jsonl');
    const withData = (id: string, data: string): QueueMessage => ({ ...m(0), id, body: { encoding: 'utf8', data, sizeBytes: MAX_SNAPSHOT_LINE_BYTES, truncated: false } });
    const rest = Buffer.byteLength(formatMessageLine(withData('fits', ''))) - 1;
    const fits = withData('fits', 'x'.repeat(MAX_SNAPSHOT_LINE_BYTES - rest));
    expect(Buffer.byteLength(formatMessageLine(fits)) - 1).toBe(MAX_SNAPSHOT_LINE_BYTES);
    // One byte more: the same length with one character JSON escapes to two bytes.
    const over = withData('over', `"${'x'.repeat(MAX_SNAPSHOT_LINE_BYTES - rest - 1)}`);
    const w = await SnapshotWriter.create(path);
    await w.writeHeader({ exportedAt: 1, source: { broker: 'redis', connection: 'redis://h:6379', queue } });
    await w.writeMessage(m(1));
    const refused = await w.writeMessage(over).then(
      () => null,
      (e: unknown) => e,
    );
    expect(isSnapshotLineTooLong(refused)).toBe(true);
    expect((refused as Error).message).toBe(
      `Message over cannot be written: its snapshot line (the message as JSON, body 256.0 MiB stored as utf8) would be longer than ${String(MAX_SNAPSHOT_LINE_BYTES)} bytes (256.0 MiB), the longest line a snapshot reader accepts, so it cannot be backed up or exported readably.`,
    );
    await w.writeMessage(fits);
    await w.writeMessage(m(2));
    expect(await w.finish()).toMatchObject({ messages: 3 });
    const sections = await readSnapshotFile(path);
    expect(sections[0]?.messages.map((x) => [x.id, x.body.data.length])).toEqual([
      ['1', m(1).body.data.length],
      ['fits', MAX_SNAPSHOT_LINE_BYTES - rest],
      ['2', m(2).body.data.length],
    ]);
  }, 60_000);
});

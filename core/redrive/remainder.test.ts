import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { QueueMessage, QueueSummary } from '../../shared/domain';
import { createSnapshotAdapter } from '../adapters/snapshot';
import { formatHeaderLine, formatMessageLine, formatWrittenHeaderLine, REDRIVE_BACKUP_PARTIAL_REASON, type SnapshotHeaderInput } from '../snapshot/format';
import { readSnapshotFile } from '../snapshot/reader';
import { checkRemainderPath, defaultRemainderPath, writeRemainder } from './remainder';

const queue = (name: string): QueueSummary => ({
  id: `list:${name}`, name, broker: 'redis', kind: 'redis-list', depth: 3, inFlight: null, delayed: null, consumers: null, counts: {}, deadLetterTargets: [], deadLetterSources: [], isDeadLetterQueue: true,
  capabilities: { canPeekNonDestructively: true, peekSideEffects: [], peekMayDeadLetter: false, canPageFromCursor: true, maxPeekWindow: 1000, peekStates: [] }, config: {},
});
const msg = (q: QueueSummary, id: string, data: string): QueueMessage => ({
  id, queueId: q.id, queueName: q.name, position: null, body: { encoding: 'utf8', data, sizeBytes: Buffer.byteLength(data), truncated: false }, headers: {}, properties: {}, meta: {},
});
const headerOf = (q: QueueSummary): SnapshotHeaderInput => ({ exportedAt: 1_700_000_000_000, source: { broker: 'redis', connection: 'redis://h:6379', queue: q }, selection: 'ids', partial: true, partialReason: REDRIVE_BACKUP_PARTIAL_REASON });

const a = queue('a-dlq');
const b = queue('b-dlq');
/**
 * Message lines as a writer would not write them (key order, spaces, an unknown field, a CRLF
 * ending, escapes): a remainder must copy them as they are, not write them again.
 */
const lineA0 = formatMessageLine(msg(a, 'a0', 'first'));
const lineA1 = `{"id":"a1", "type":"message","queueId":"list:a-dlq","queueName":"a-dlq","position":null,"body":{"encoding":"utf8","data":"caf\\u00e9 \\"x\\"","sizeBytes":9,"truncated":false},"headers":{"__proto__":1},"properties":{},"meta":{},"extra":{"kept":true}}\n`;
const lineA2 = formatMessageLine(msg(a, 'a2', 'third'));
const lineB0 = `${formatMessageLine(msg(b, 'b0', 'b first')).slice(0, -1)}\r\n`;
const lineB1 = formatMessageLine({ ...msg(b, 'b1', ''), body: { encoding: 'base64', data: 'AAEC/w==', sizeBytes: 4, truncated: false } });
/** Two sections: a-dlq (a0, a1, a2: ordinals 0-2), b-dlq (b0, b1: ordinals 3-4). */
const twoSections = (): string =>
  formatWrittenHeaderLine(headerOf(a), { messages: 3, section: 0, sections: 2 }) + lineA0 + lineA1 + lineA2 + formatWrittenHeaderLine(headerOf(b), { messages: 2, section: 1, sections: 2 }) + lineB0 + lineB1;

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qs-remainder-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function completeness(path: string, queueId: string): Promise<unknown> {
  const adapter = createSnapshotAdapter({ kind: 'snapshot', path });
  try {
    return ((await adapter.getQueue(queueId)).config.snapshot as { completeness: unknown }).completeness;
  } finally {
    await adapter.close();
  }
}

describe('writeRemainder', () => {
  it('copies the picked message lines byte for byte, in order, under their sections’ headers with their own counts and remainderOf', async () => {
    const source = join(dir, 'backup.jsonl');
    await writeFile(source, twoSections());
    const w = await writeRemainder({ source, pick: (n) => n === 1 || n >= 3, path: null, now: Date.UTC(2026, 11, 3, 9, 30) });
    expect(w).toEqual({ path: join(dir, 'backup.remainder-2026-12-03T09-30-00-000Z.jsonl'), messages: 3, sections: 2, fellBack: false });
    const text = await readFile(w!.path, 'utf8');
    const lines = text.split('\n');
    expect(lines).toHaveLength(6); // 2 headers, 3 messages, '' after the last \n
    expect(`${lines[1]}\n`).toBe(lineA1);
    expect(`${lines[3]}\r\n`).toBe(lineB0);
    expect(`${lines[4]}\n`).toBe(lineB1);
    const h0 = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(h0).toMatchObject({ type: 'queue', version: 1, exportedAt: 1_700_000_000_000, selection: 'ids', partial: true, partialReason: REDRIVE_BACKUP_PARTIAL_REASON, written: { messages: 1, section: 0, sections: 2 }, remainderOf: { path: source, at: Date.UTC(2026, 11, 3, 9, 30) } });
    expect(JSON.parse(lines[2]!)).toMatchObject({ source: { queue: { name: 'b-dlq' } }, written: { messages: 2, section: 1, sections: 2 } });
    // It reads back as a complete snapshot of exactly those messages (the source is unchanged).
    const sections = await readSnapshotFile(w!.path);
    expect(sections.map((s) => s.messages.map((m) => m.id))).toEqual([['a1'], ['b0', 'b1']]);
    expect(sections[0]!.messages[0]!.headers).toEqual(JSON.parse('{"__proto__":1}'));
    expect(await completeness(w!.path, 'list:a-dlq')).toBe('complete');
    expect(await completeness(w!.path, 'list:b-dlq')).toBe('complete');
    expect(await readFile(source, 'utf8')).toBe(twoSections());
  });

  it('leaves out a section with nothing picked, and numbers the rest; never overwrites: the next default name gets -2', async () => {
    const source = join(dir, 'x.jsonl');
    await writeFile(source, twoSections());
    const now = Date.UTC(2026, 0, 1);
    const first = await writeRemainder({ source, pick: (n) => n === 4, path: null, now });
    const second = await writeRemainder({ source, pick: (n) => n === 0, path: null, now });
    expect(first?.path).toBe(defaultRemainderPath(source, now));
    expect(second?.path).toBe(defaultRemainderPath(source, now).replace(/\.jsonl$/, '-2.jsonl'));
    const s1 = await readSnapshotFile(first!.path);
    expect(s1.map((s) => [s.header.source.queue.name, s.header.written, s.messages.map((m) => m.id)])).toEqual([['b-dlq', { messages: 1, section: 0, sections: 1 }, ['b1']]]);
    expect((await readSnapshotFile(second!.path))[0]?.messages.map((m) => m.id)).toEqual(['a0']);
  });

  it('returns null and creates nothing when no message is picked', async () => {
    const source = join(dir, 'x.jsonl');
    await writeFile(source, twoSections());
    expect(await writeRemainder({ source, pick: () => false, path: null, now: 1 })).toBeNull();
    expect(await readdir(dir)).toEqual(['x.jsonl']);
  });

  it('an explicit path that exists is refused, the file there untouched; checkRemainderPath refuses it before a run', async () => {
    const source = join(dir, 'x.jsonl');
    await writeFile(source, twoSections());
    const taken = join(dir, 'taken.jsonl');
    await writeFile(taken, 'mine\n');
    await expect(checkRemainderPath(taken)).rejects.toMatchObject({ code: 'INVALID_INPUT', message: expect.stringContaining('already exists') as unknown });
    await expect(writeRemainder({ source, pick: () => true, path: taken, now: 1 })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    expect(await readFile(taken, 'utf8')).toBe('mine\n');
    // Under a file, not a folder: refused before, and no file left by a write.
    await expect(checkRemainderPath(join(taken, 'r.jsonl'))).rejects.toMatchObject({ code: 'INVALID_INPUT', message: expect.stringContaining('is not a folder') as unknown });
    await expect(writeRemainder({ source, pick: () => true, path: join(taken, 'r.jsonl'), now: 1 })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    // A new folder is fine (it is created).
    await expect(checkRemainderPath(join(dir, 'new', 'deeper', 'r.jsonl'))).resolves.toBeUndefined();
    const w = await writeRemainder({ source, pick: (n) => n === 2, path: join(dir, 'new', 'deeper', 'r.jsonl'), now: 1 });
    expect((await readSnapshotFile(w!.path))[0]?.messages.map((m) => m.id)).toEqual(['a2']);
    expect((await readdir(dir)).sort()).toEqual(['new', 'taken.jsonl', 'x.jsonl']);
  });

  it('a gzip source gives a plain remainder with the same lines; an older header (no written record) stays without one', async () => {
    const older = formatHeaderLine(headerOf(a)) + lineA0 + lineA1 + lineA2;
    const source = join(dir, 'old.jsonl.gz');
    await writeFile(source, gzipSync(Buffer.from(older)));
    const w = await writeRemainder({ source, pick: (n) => n >= 1, path: null, now: 0 });
    expect(w?.path).toBe(join(dir, 'old.remainder-1970-01-01T00-00-00-000Z.jsonl'));
    const lines = (await readFile(w!.path, 'utf8')).split('\n');
    expect(`${lines[1]}\n${lines[2]}\n`).toBe(lineA1 + lineA2);
    const h = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(h.written).toBeUndefined();
    expect(h.remainderOf).toEqual({ path: source, at: 0 });
    expect(await completeness(w!.path, 'list:a-dlq')).toBe('unchecked');
  });
});

import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { QueueMessage, QueueSummary } from '../../shared/domain';
import { createSnapshotAdapter } from '../adapters/snapshot';
import { REDRIVE_BACKUP_PARTIAL_REASON } from '../snapshot/format';
import { RedriveBackup } from './backup';

const queue: QueueSummary = {
  id: 'list:jobs-dlq', name: 'jobs-dlq', broker: 'redis', kind: 'redis-list', depth: 3, inFlight: null, delayed: null, consumers: null, counts: {}, deadLetterTargets: [], deadLetterSources: [], isDeadLetterQueue: true,
  capabilities: { canPeekNonDestructively: true, peekSideEffects: [], peekMayDeadLetter: false, canPageFromCursor: true, maxPeekWindow: 1000, peekStates: [] }, config: {},
};
const m = (i: number): QueueMessage => ({
  id: String(i), queueId: queue.id, queueName: queue.name, position: i, body: { encoding: 'utf8', data: `body ${i}`, sizeBytes: 6, truncated: false }, headers: {}, properties: {}, meta: {},
});
const header = { exportedAt: 1, source: { broker: 'redis' as const, connection: 'redis://h:6379', queue }, selection: 'ids' as const, partial: true, partialReason: REDRIVE_BACKUP_PARTIAL_REASON };

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qs-backup-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function snapshotInfo(path: string): Promise<Record<string, unknown>> {
  const adapter = createSnapshotAdapter({ kind: 'snapshot', path });
  try {
    const q = await adapter.getQueue('list:jobs-dlq');
    return q.config.snapshot as Record<string, unknown>;
  } finally {
    await adapter.close();
  }
}

describe('RedriveBackup completeness record', () => {
  it('is written null while the run goes on (a killed run leaves it so), and the count in place at close', async () => {
    const path = join(dir, 'b.jsonl');
    const b = await RedriveBackup.create(path, header);
    await b.append([m(1), m(2)]);
    await b.append([m(3)]);
    // What a run killed here leaves on disk: every appended message, the header without a count.
    const open = await readFile(path, 'utf8');
    const openHeader = open.split('\n')[0] ?? '';
    expect(JSON.parse(openHeader)).toMatchObject({ written: null });
    expect(await snapshotInfo(path)).toMatchObject({ messages: 3, completeness: 'cut', redriveBackup: true, cutReason: expect.stringContaining('The backup was not finished') });
    expect(await b.close({ removeIfEmpty: true })).toBe(path);
    const closed = await readFile(path, 'utf8');
    const closedHeader = closed.split('\n')[0] ?? '';
    expect(JSON.parse(closedHeader)).toMatchObject({ written: { messages: 3, section: 0, sections: 1 } });
    // Overwritten in place: the same length, the messages untouched.
    expect(Buffer.byteLength(closedHeader)).toBe(Buffer.byteLength(openHeader));
    expect(closed.slice(closedHeader.length)).toBe(open.slice(openHeader.length));
    expect(await snapshotInfo(path)).toMatchObject({ messages: 3, completeness: 'complete', cutReason: null });
  });
});

// @vitest-environment jsdom
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { OperationSnapshot } from '../../../shared/domain';
import { buildReport, type CurrentSettings, type Measurement } from '../../../shared/tuning';
import { installFakeApi, removeFakeApi, type FakeApi, type FakeHandler } from '../test/fake-api';
import { useStore } from '.';
import { queueKey } from './types';

const initial = useStore.getState();
let handlers: Record<string, FakeHandler>;
let calls: FakeApi['calls'];

beforeEach(() => {
  useStore.setState(initial, true);
  ({ handlers, calls } = installFakeApi({}, { errorCode: 'UNSUPPORTED' }));
});
afterEach(() => {
  removeFakeApi();
});

const settings: CurrentSettings = { target: 'sqs', timeoutMs: 30_000, timeoutSource: 'queue attribute VisibilityTimeout', maxReceiveCount: 3, deadLetterTarget: 'orders-dlq', brokerVersion: null, perQueueTimeoutSupported: null, retryPolicy: null, notes: [] };
const measurement: Measurement = { source: 'file', measures: 'x', confidence: 'imported', confidenceNote: '', samplesMs: [1000, 2000, 3000], meanMs: null, sampleErrorMs: null, redeliveries: null, retryPolicy: null, startedAt: null, endedAt: null, polls: 0, notes: [] };
const op = (status: OperationSnapshot['status'], result: Record<string, unknown> | null = null): OperationSnapshot => ({ id: 'op1', type: 'tune', label: 'x', status, total: 1000, processed: status === 'completed' ? 1000 : 400, moved: 0, skipped: 0, failed: 0, errors: status === 'failed' ? [{ code: 'UNSUPPORTED', message: 'CloudWatch metrics could not be read' }] : [], rate: null, etaMs: null, startedAt: 1, finishedAt: null, result });

describe('tuning slice', () => {
  it('loads sources, runs a measurement to its report by polling the operation, applies and reloads the settings', async () => {
    const key = queueKey('c1', 'sqs:orders');
    handlers['tuning.sources'] = () => ({ sources: [], settings, canApply: true });
    await useStore.getState().loadTuningSources('c1', 'sqs:orders');
    expect(useStore.getState().tuning[key]?.sources?.canApply).toBe(true);

    const report = buildReport({ queueId: 'sqs:orders', queueName: 'orders', target: 'sqs', measurement, current: settings });
    let polls = 0;
    handlers['tuning.measure'] = () => op('running');
    handlers['operations.get'] = () => (++polls < 2 ? op('running') : op('completed', { report }));
    await useStore.getState().runTuning({ connectionId: 'c1', queueId: 'sqs:orders', source: 'file' });
    const entry = useStore.getState().tuning[key]!;
    expect(entry.runStatus).toBe('ready');
    expect(entry.report?.recommendation?.recommendedMs).toBe(9000);
    expect(polls).toBe(2);

    handlers['tuning.apply'] = (input) => ({ setting: 'VisibilityTimeout', before: { VisibilityTimeout: '30' }, after: { VisibilityTimeout: String(Number(input.timeoutMs) / 1000) }, auditLog: '/tmp/audit-log.jsonl' });
    const applied = await useStore.getState().applyTuning('c1', 'sqs:orders', 9000);
    expect(applied.after).toEqual({ VisibilityTimeout: '9' });
    expect(calls.slice(-2).map((c) => c.method)).toEqual(['tuning.apply', 'tuning.sources']);
  });

  it('a failed operation keeps its last error; a refused apply throws and changes nothing', async () => {
    const key = queueKey('c1', 'sqs:orders');
    handlers['tuning.measure'] = () => op('failed');
    await useStore.getState().runTuning({ connectionId: 'c1', queueId: 'sqs:orders', source: 'cloudwatch' });
    expect(useStore.getState().tuning[key]).toMatchObject({ runStatus: 'error', runError: { code: 'UNSUPPORTED' } });
    handlers['tuning.apply'] = () => {
      throw new Error('not a queue attribute');
    };
    await expect(useStore.getState().applyTuning('c1', 'sqs:orders', 9000)).rejects.toMatchObject({ code: 'UNSUPPORTED' });
    expect(useStore.getState().tuning[key]?.applied).toBeNull();
  });
});

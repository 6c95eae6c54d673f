// @vitest-environment jsdom
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { cleanup, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import type { ApiResult } from '../../../shared/api/contract';
import type { RedrivePlan } from '../../../shared/redrive/types';
import { useStore } from '../store';
import { queueKey } from '../store/types';
import { operationSnapshot, summary } from '../test/fixtures';
import { RedrivePanel } from './RedrivePanel';

type Call = { method: string; input: Record<string, unknown> };
let calls: Call[] = [];
const initial = useStore.getState();
const dlq = summary({ id: 'sqs:orders-dlq', name: 'orders-dlq', broker: 'sqs', kind: 'sqs-standard', isDeadLetterQueue: true, depth: 6 });

function plan(over: Partial<RedrivePlan> = {}): RedrivePlan {
  return {
    dlq: { id: dlq.id, name: dlq.name, depth: 6 },
    examined: 6,
    toMove: 6,
    toSkip: 0,
    skipped: [],
    failed: 0,
    cannotMove: [],
    maxBodyBytes: 1049600,
    notFoundIds: [],
    notFoundCount: 0,
    targets: [{ queueId: 'sqs:orders', queueName: 'orders', via: 'RedrivePolicy source', exists: true, loop: null, warnings: [], count: 6 }],
    loops: [],
    warnings: [],
    groups: [{ groupKey: 'g1', class: 'transient', label: 'HTTP 503', reason: 'upstream down', count: 6, wastedRetries: 0, sampleIds: [] }],
    wastedRetries: 0,
    samples: [],
    native: { support: null, wouldUse: false, why: 'the endpoint has no message-move tasks' },
    filter: 'all',
    stoppedBecause: 'exhausted',
    notes: [],
    ...over,
  };
}

beforeEach(() => {
  calls = [];
  useStore.setState(initial, true);
  window.queuescope = {
    invoke: vi.fn((method: string, input: unknown) => {
      calls.push({ method, input: input as Record<string, unknown> });
      const result: ApiResult<unknown> = { ok: false, error: { code: 'INTERNAL', message: `not in this test: ${method}` } };
      return Promise.resolve(result);
    }),
  };
});
afterEach(() => {
  cleanup();
  delete window.queuescope;
});

function confirmRedrive(p: RedrivePlan): HTMLElement {
  useStore.setState({ redrive: { [queueKey('c1', dlq.id)]: { analysis: p, analysing: false, analysisOp: null, preview: p, previewing: false, operation: null, error: null } } });
  render(<RedrivePanel connectionId="c1" summary={dlq} queues={[dlq]} checkedIds={[]} />);
  fireEvent.click(screen.getByRole('button', { name: `Redrive ${p.toMove}…` }));
  return screen.getByRole('dialog');
}

describe('RedrivePanel: the run does what the confirm dialog said', () => {
  it('starts the run limited to the messages the dry run examined, and says so', async () => {
    // 6 in the dry run; 2 more dead letters arriving before the click must not be moved unseen
    // (ui-pass: "Redrive 6 messages?" → "8 moved").
    const dialog = confirmRedrive(plan());
    expect(within(dialog).getByRole('heading').textContent).toContain('Redrive 6 messages');
    expect(within(dialog).getByTestId('redrive-scope').textContent).toContain('at most the 6 messages the dry run examined');
    fireEvent.click(within(dialog).getByRole('button', { name: 'Redrive' }));
    await waitFor(() => expect(calls.some((c) => c.method === 'redrive.start')).toBe(true));
    const start = calls.find((c) => c.method === 'redrive.start');
    expect(start?.input.limit).toBe(6);
    expect(start?.input.selection).toEqual({ kind: 'all' });
  });

  it('leaves a native move unlimited and says it moves the whole DLQ', async () => {
    const dialog = confirmRedrive(plan({ native: { support: null, wouldUse: true, why: 'the whole DLQ goes back to its source' } }));
    expect(within(dialog).getByTestId('redrive-scope').textContent).toContain('every message in the DLQ when it runs');
    fireEvent.click(within(dialog).getByRole('button', { name: 'Redrive' }));
    await waitFor(() => expect(calls.some((c) => c.method === 'redrive.start')).toBe(true));
    expect(calls.find((c) => c.method === 'redrive.start')?.input).not.toHaveProperty('limit');
  });

  it('shows a bidi override in queue names as an escape in the target list and the dialog', () => {
    const spoof = summary({ id: 'sqs:spoof', name: 'orders-\u202eqld', broker: 'sqs', kind: 'sqs-standard' });
    const p = plan({ targets: [{ queueId: spoof.id, queueName: spoof.name, via: 'chosen by the user', exists: true, loop: null, warnings: [], count: 6 }] });
    useStore.setState({ redrive: { [queueKey('c1', dlq.id)]: { analysis: p, analysing: false, analysisOp: null, preview: p, previewing: false, operation: null, error: null } } });
    render(<RedrivePanel connectionId="c1" summary={dlq} queues={[dlq, spoof]} checkedIds={[]} />);
    expect(within(screen.getByRole('combobox', { name: 'Target queue' })).getByRole('option', { name: 'orders-\\u202eqld' })).toBeTruthy();
    fireEvent.click(screen.getByRole('button', { name: 'Redrive 6…' }));
    expect(screen.getByRole('dialog').textContent).toContain('6 → orders-\\u202eqld');
    expect(document.body.textContent).not.toMatch(/\u202e/);
  });
});


describe('RedrivePanel: the result after a cancel', () => {
  it('says the cancelled run’s counts once: the CANCELLED summary is not repeated above the result block', () => {
    const result = {
      mode: 'client-side',
      mechanism: null,
      dlqId: dlq.id,
      dlqName: dlq.name,
      examined: 5,
      moved: 3,
      skipped: 2,
      failed: 0,
      possibleDuplicates: 0,
      targets: [{ queueId: 'sqs:orders', queueName: 'orders', count: 3 }],
      skipReasons: [{ reason: 'not selected', count: 2 }],
      wastedRetries: 0,
      stoppedBecause: null,
      backupPath: '/tmp/backup.jsonl',
      auditId: 'a1',
      filter: 'all',
      notes: [],
      warnings: [],
      notFoundIds: [],
      notFoundCount: 0,
    };
    // What the engine leaves on a cancelled operation: no `result`, the counts in the last error's details.
    const op = operationSnapshot({ type: 'redrive', label: 'Redrive orders-dlq', status: 'cancelled', total: 10, processed: 5, moved: 3, skipped: 2, possibleDuplicates: 0, errors: [{ code: 'CANCELLED', message: 'Cancelled after 3 moved, 0 failed, 0 possible duplicates.', details: { result } }], startedAt: 1, finishedAt: 2 });
    useStore.setState({ redrive: { [queueKey('c1', dlq.id)]: { analysis: plan(), analysing: false, analysisOp: null, preview: null, previewing: false, operation: op, error: null } } });
    render(<RedrivePanel connectionId="c1" summary={dlq} queues={[dlq]} checkedIds={[]} />);
    const run = screen.getByTestId('redrive-run');
    expect(within(run).getByTestId('redrive-result').textContent).toContain('Cancelled (client-side): 3 moved, 2 stayed, 0 failed, 0 possible duplicates.');
    expect(run.textContent).not.toContain('Cancelled after 3 moved');
    expect(run.textContent.match(/Cancelled/g)).toHaveLength(1);
  });

  it('still shows an error that is not the cancel summary (a failed run)', () => {
    const op = operationSnapshot({ id: 'op-2', type: 'redrive', label: 'Redrive orders-dlq', status: 'failed', total: 10, processed: 5, moved: 3, skipped: 2, errors: [{ code: 'BROKER_ERROR', message: 'The broker closed the connection.' }], startedAt: 1, finishedAt: 2 });
    useStore.setState({ redrive: { [queueKey('c1', dlq.id)]: { analysis: plan(), analysing: false, analysisOp: null, preview: null, previewing: false, operation: op, error: null } } });
    render(<RedrivePanel connectionId="c1" summary={dlq} queues={[dlq]} checkedIds={[]} />);
    expect(screen.getByTestId('redrive-run').textContent).toContain('The broker closed the connection.');
  });
});

describe('RedrivePanel: a DLQ whose reads move messages on (refused until accepted)', () => {
  it('shows the refusal with an "Accept side effects" checkbox, and the next analysis and preview carry acceptSideEffects', async () => {
    const refusal = "Refusing to read orders-dlq for a redrive or its dry run: orders-dlq has its own RedrivePolicy (maxReceiveCount 1 → orders-dlq2): …";
    useStore.setState({ redrive: { [queueKey('c1', dlq.id)]: { analysis: null, analysing: false, analysisOp: null, preview: null, previewing: false, operation: null, error: { code: 'PEEK_REFUSED', message: refusal } } } });
    render(<RedrivePanel connectionId="c1" summary={dlq} queues={[dlq]} checkedIds={[]} />);
    const notice = screen.getByTestId('redrive-side-effects');
    expect(notice.textContent).toContain('maxReceiveCount 1 → orders-dlq2');
    fireEvent.click(within(notice).getByRole('checkbox', { name: /Accept side effects/ }));
    fireEvent.click(screen.getByRole('button', { name: 'Analyse for redrive' }));
    await waitFor(() => expect(calls.some((c) => c.method === 'redrive.analyse')).toBe(true));
    expect(calls.find((c) => c.method === 'redrive.analyse')?.input.acceptSideEffects).toBe(true);

    // With an analysis, the preview carries it too.
    calls = [];
    useStore.setState({ redrive: { [queueKey('c1', dlq.id)]: { analysis: plan(), analysing: false, analysisOp: null, preview: plan(), previewing: false, operation: null, error: null } } });
    fireEvent.click(await screen.findByRole('button', { name: 'Preview (dry run)' }));
    await waitFor(() => expect(calls.some((c) => c.method === 'redrive.plan')).toBe(true));
    expect(calls.find((c) => c.method === 'redrive.plan')?.input.acceptSideEffects).toBe(true);
  });

  it('a Redis stream DLQ: the pending entries idle time (seconds) goes with the preview as pendingMinIdleMs, and a bad one is refused', async () => {
    const stream = summary({ id: 'stream:orders-dlq', name: 'orders-dlq', broker: 'redis', kind: 'redis-stream', isDeadLetterQueue: true, depth: 6, capabilities: { peekStates: ['all', 'pending:alerts'] } });
    const p = plan({ dlq: { id: stream.id, name: stream.name, depth: 6 } });
    useStore.setState({ redrive: { [queueKey('c1', stream.id)]: { analysis: p, analysing: false, analysisOp: null, preview: p, previewing: false, operation: null, error: null } } });
    render(<RedrivePanel connectionId="c1" summary={stream} queues={[stream]} checkedIds={[]} />);
    const idle = screen.getByRole('textbox', { name: 'Pending entries idle time (seconds)' });
    expect((idle as HTMLInputElement).value).toBe('60');
    const preview = screen.getByRole('button', { name: 'Preview (dry run)' });
    // The default (60 s) is not sent: the engine's default applies.
    fireEvent.click(preview);
    await waitFor(() => expect(calls.some((c) => c.method === 'redrive.plan')).toBe(true));
    expect(calls.find((c) => c.method === 'redrive.plan')?.input).not.toHaveProperty('pendingMinIdleMs');

    calls = [];
    fireEvent.change(idle, { target: { value: '600' } });
    fireEvent.click(preview);
    await waitFor(() => expect(calls.some((c) => c.method === 'redrive.plan')).toBe(true));
    expect(calls.find((c) => c.method === 'redrive.plan')?.input.pendingMinIdleMs).toBe(600_000);

    fireEvent.change(idle, { target: { value: 'soon' } });
    expect(screen.getByText('Pending entries idle time must be a number of seconds from 0.001 to 604800 (7 days).')).toBeTruthy();
    expect((preview as HTMLButtonElement).disabled).toBe(true);

    // Included pending entries all move: no idle time to set.
    fireEvent.click(screen.getByRole('checkbox', { name: /Include pending entries/ }));
    expect(screen.queryByRole('textbox', { name: 'Pending entries idle time (seconds)' })).toBeNull();
    expect((preview as HTMLButtonElement).disabled).toBe(false);
  });
});

describe('RedrivePanel: messages the reads moved on (an SQS DLQ with its own RedrivePolicy, side effects accepted)', () => {
  const movedOn = { queue: 'orders-dlq2', maxReceiveCount: 1, count: 4, measuredBy: "measured as the growth of orders-dlq2's visible + in-flight + delayed messages from before the first receive to after the last, 0 → 4" };

  it('the preview says how many went where, instead of only "Would move 0"', () => {
    const p = plan({ examined: 0, toMove: 0, targets: [], groups: [], movedOn });
    useStore.setState({ redrive: { [queueKey('c1', dlq.id)]: { analysis: p, analysing: false, analysisOp: null, preview: p, previewing: false, operation: null, error: null } } });
    render(<RedrivePanel connectionId="c1" summary={dlq} queues={[dlq]} checkedIds={[]} />);
    const notices = screen.getAllByTestId('redrive-moved-on').map((n) => n.textContent);
    expect(notices).toContain(
      "Moved on, not redriven: This preview's receives moved 4 messages of orders-dlq on to orders-dlq2 (at the maxReceiveCount 1 of orders-dlq's own RedrivePolicy) instead of returning them: they left the DLQ without being redriven and are in orders-dlq2 now, not lost — redrive orders-dlq2 to move them (measured as the growth of orders-dlq2's visible + in-flight + delayed messages from before the first receive to after the last, 0 → 4).",
    );
    expect(notices.some((t) => t.startsWith("Moved on, not redriven: This analysis's receives moved 4 messages"))).toBe(true);
  });

  it('the result of a completed run names them too; none when nothing was moved on', () => {
    const result = { mode: 'client-side', mechanism: null, dlqId: dlq.id, dlqName: dlq.name, examined: 0, moved: 0, skipped: 0, failed: 0, possibleDuplicates: 0, targets: [], skipReasons: [], wastedRetries: 0, stoppedBecause: 'exhausted', backupPath: null, auditId: 'a1', filter: 'all', notes: [], warnings: [], notFoundIds: [], notFoundCount: 0, movedOn: { ...movedOn, count: 1 } };
    const op = operationSnapshot({ type: 'redrive', label: 'Redrive orders-dlq', status: 'completed', total: 1, processed: 0, result, startedAt: 1, finishedAt: 2 });
    useStore.setState({ redrive: { [queueKey('c1', dlq.id)]: { analysis: plan(), analysing: false, analysisOp: null, preview: null, previewing: false, operation: op, error: null } } });
    render(<RedrivePanel connectionId="c1" summary={dlq} queues={[dlq]} checkedIds={[]} />);
    const run = within(screen.getByTestId('redrive-result'));
    expect(run.getByTestId('redrive-moved-on').textContent).toContain("This run's receives moved 1 message of orders-dlq on to orders-dlq2");
    cleanup();
    const none = operationSnapshot({ type: 'redrive', label: 'Redrive orders-dlq', status: 'completed', total: 1, processed: 0, result: { ...result, movedOn: { ...movedOn, count: 0 } }, startedAt: 1, finishedAt: 2 });
    useStore.setState({ redrive: { [queueKey('c1', dlq.id)]: { analysis: plan(), analysing: false, analysisOp: null, preview: null, previewing: false, operation: none, error: null } } });
    render(<RedrivePanel connectionId="c1" summary={dlq} queues={[dlq]} checkedIds={[]} />);
    expect(screen.queryByTestId('redrive-moved-on')).toBeNull();
  });
});

describe('RedrivePanel: a FIFO DLQ whose dry run could not see every message', () => {
  it('the preview says how many were not seen and that its counts cover only those examined', () => {
    const reason = 'FIFO: 9 messages of the 12 orders-dlq.fifo held at the start were not seen (not examined, not counted above): they are behind messages of 3 message groups that this dry run held.';
    const p = plan({ examined: 3, toMove: 3, targets: [{ queueId: 'sqs:orders', queueName: 'orders', via: 'RedrivePolicy source', exists: true, loop: null, warnings: [], count: 3 }], unseen: { count: 9, groups: 3, reason } });
    useStore.setState({ redrive: { [queueKey('c1', dlq.id)]: { analysis: p, analysing: false, analysisOp: null, preview: p, previewing: false, operation: null, error: null } } });
    render(<RedrivePanel connectionId="c1" summary={dlq} queues={[dlq]} checkedIds={[]} />);
    expect(screen.getByTestId('redrive-unseen').textContent).toBe(`Not seen: 9 — these counts cover only the 3 examined. ${reason}`);
    expect(screen.getByTestId('redrive-analysis-unseen').textContent).toContain('Not seen: 9 — the groups below cover only the 3 examined.');
  });
});

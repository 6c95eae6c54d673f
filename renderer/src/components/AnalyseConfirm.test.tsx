// @vitest-environment jsdom
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { cleanup, fireEvent, render, screen, within } from '@testing-library/react';
import type { QueueSummary } from '../../../shared/domain';
import { useStore } from '../store';
import { installFakeApi, removeFakeApi, type FakeApi } from '../test/fake-api';
import { emptyInspectReport, operationSnapshot, summary } from '../test/fixtures';
import { QueueView } from './QueueView';

// "Analyse…" also reads the queue's dead-letter partners (its DLQ, or a DLQ's source queues) to
// compare duplicate keys, and those reads change them too: the confirmation named only the
// inspected queue's own side effects.

const REQUEUE = 'Peeked messages are requeued with redelivered=true, so consumers see them as redeliveries.';
const RECEIVE = 'Each peek adds 1 to ApproximateReceiveCount of every message it reads (SQS has no read without receive).';
const initial = useStore.getState();
let api: FakeApi;
let queues: QueueSummary[];


/** Installs the fake API; `listed` are the queues `queues.list` returns (others only through `queues.get`). */
function setup(listed: QueueSummary[]): void {
  api = installFakeApi({
    'queues.get': (input) => {
      const q = queues.find((x) => x.id === input.queueId);
      if (q === undefined) throw new Error(`no queue ${String(input.queueId)}`);
      return q;
    },
    'queues.list': () => listed,
    'inspect.rules.get': () => ({ connectionId: 'c1', settings: { queues: [] }, persisted: true, note: null, problem: null, brokerVersion: null }),
    'inspect.queue': (input) => operationSnapshot({ result: { report: emptyInspectReport(queues.find((x) => x.id === input.queueId) ?? queues[0]!) } }),
  });
}
const inspectCalls = () => api.calls.filter((c) => c.method === 'inspect.queue').map((c) => c.input);

beforeEach(() => {
  vi.spyOn(HTMLElement.prototype, 'clientHeight', 'get').mockReturnValue(600);
  vi.spyOn(HTMLElement.prototype, 'clientWidth', 'get').mockReturnValue(800);
  useStore.setState(initial, true);
});
afterEach(() => {
  cleanup();
  vi.restoreAllMocks();
  removeFakeApi();
});

const rabbit = (name: string, over: Parameters<typeof summary>[0] = {}): QueueSummary =>
  summary({
    id: `rabbitmq:%2F/${name}`,
    name,
    kind: 'rabbitmq-classic',
    config: {},
    ...over,
    capabilities: { canPeekNonDestructively: false, peekMayDeadLetter: false, peekSideEffects: [{ kind: 'redelivered-flag', description: REQUEUE }] },
  });

describe('Analyse… confirmation: the side effects of every queue the analysis reads', () => {
  it("names the DLQ read for the comparison, with the DLQ's own side effects; confirming reads both", async () => {
    const dlq = rabbit('orders.dlq', { isDeadLetterQueue: true, deadLetterSources: ['rabbitmq:%2F/orders'] });
    const work = rabbit('orders', { deadLetterTargets: [{ queueId: dlq.id, queueName: 'orders.dlq', via: "x-dead-letter-exchange 'dlx' (argument)" }] });
    queues = [work, dlq];
    setup(queues);
    render(<QueueView connectionId="c1" queueId={work.id} />);
    fireEvent.click(await screen.findByRole('button', { name: 'Analyse…' }));
    const dialog = await screen.findByRole('dialog');
    const compared = within(dialog).getByTestId('analyse-effects-compared');
    expect(compared.querySelector('p')?.textContent).toBe('To compare duplicate keys, the analysis also reads orders.dlq (the dead-letter queue of orders), which changes it:');
    expect([...compared.querySelectorAll('li')].map((li) => li.textContent)).toEqual([REQUEUE]);
    expect([...within(dialog).getByTestId('analyse-effects-own').querySelectorAll('li')].map((li) => li.textContent)).toEqual([REQUEUE]);
    fireEvent.click(within(dialog).getByRole('button', { name: 'Analyse all messages' }));
    await screen.findByTestId('inspect-report');
    expect(inspectCalls()).toEqual([{ connectionId: 'c1', queueId: work.id, acceptSideEffects: true }]);
  });

  it('"Analyse without the comparison" reads only the queue (compareDeadLetter: false)', async () => {
    const dlq = rabbit('orders.dlq', { isDeadLetterQueue: true });
    const work = rabbit('orders', { deadLetterTargets: [{ queueId: dlq.id, queueName: 'orders.dlq', via: 'policy' }] });
    queues = [work, dlq];
    setup(queues);
    render(<QueueView connectionId="c1" queueId={work.id} />);
    fireEvent.click(await screen.findByRole('button', { name: 'Analyse…' }));
    fireEvent.click(within(await screen.findByRole('dialog')).getByRole('button', { name: 'Analyse without the comparison' }));
    await screen.findByTestId('inspect-report');
    expect(inspectCalls()).toEqual([{ connectionId: 'c1', queueId: work.id, acceptSideEffects: true, compareDeadLetter: false }]);
  });

  it("an SQS DLQ's source queue (not in the list) is looked up; a chained DLQ's read that can move messages on needs its own tick", async () => {
    const chained = 'RedrivePolicy maxReceiveCount 1: a message already received 1 time is moved to orders-dlq2 by the next receive, and a peek is a receive.';
    const source = summary({
      id: 'sqs:orders',
      name: 'orders',
      broker: 'sqs',
      kind: 'sqs-standard',
      config: {},
      deadLetterTargets: [{ queueId: 'sqs:orders-dlq', queueName: 'orders-dlq', via: 'RedrivePolicy (maxReceiveCount 5)' }],
      capabilities: { canPeekNonDestructively: false, peekMayDeadLetter: true, peekSideEffects: [{ kind: 'delivery-count', description: RECEIVE }, { kind: 'may-dead-letter', description: 'RedrivePolicy maxReceiveCount 5: …' }] },
    });
    const dlq = summary({
      id: 'sqs:orders-dlq',
      name: 'orders-dlq',
      broker: 'sqs',
      kind: 'sqs-standard',
      config: {},
      isDeadLetterQueue: true,
      deadLetterSources: ['sqs:orders'],
      deadLetterTargets: [{ queueId: 'sqs:orders-dlq2', queueName: 'orders-dlq2', via: 'RedrivePolicy (maxReceiveCount 1)' }],
      capabilities: { canPeekNonDestructively: false, peekMayDeadLetter: true, peekSideEffects: [{ kind: 'delivery-count', description: RECEIVE }, { kind: 'may-dead-letter', description: chained }] },
    });
    const dlq2 = summary({ id: 'sqs:orders-dlq2', name: 'orders-dlq2', broker: 'sqs', kind: 'sqs-standard', config: {}, isDeadLetterQueue: true, deadLetterSources: ['sqs:orders-dlq'], capabilities: { canPeekNonDestructively: false, peekMayDeadLetter: false, peekSideEffects: [{ kind: 'delivery-count', description: RECEIVE }] } });
    queues = [source, dlq, dlq2];
    setup([dlq, dlq2]); // the source queue is not in the loaded list
    render(<QueueView connectionId="c1" queueId={dlq.id} />);
    fireEvent.click(await screen.findByRole('button', { name: 'Analyse…' }));
    const dialog = await screen.findByRole('dialog');
    expect(api.calls.some((c) => c.method === 'queues.get' && c.input.queueId === 'sqs:orders')).toBe(true);
    const compared = within(dialog).getAllByTestId('analyse-effects-compared');
    // Both partners are read, as core deadLetterPartners chooses them: the source and the chained DLQ's own DLQ.
    expect(compared.map((x) => x.querySelector('p')?.textContent)).toEqual([
      'To compare duplicate keys, the analysis also reads orders (a queue that dead-letters into orders-dlq), which changes it:',
      'To compare duplicate keys, the analysis also reads orders-dlq2 (the dead-letter queue of orders-dlq), which changes it:',
    ]);
    expect(compared.map((x) => [...x.querySelectorAll('li')].map((li) => li.textContent))).toEqual([[RECEIVE, 'RedrivePolicy maxReceiveCount 5: …'], [RECEIVE]]);
    expect([...within(dialog).getByTestId('analyse-effects-own').querySelectorAll('li')].map((li) => li.textContent)).toEqual([RECEIVE, chained]);
    const all = within(dialog).getByRole('button', { name: 'Analyse all messages' });
    const alone = within(dialog).getByRole('button', { name: 'Analyse without the comparison' });
    const own = within(dialog).getByRole('checkbox', { name: 'I understand reading orders-dlq can move messages to a dead-letter queue.' });
    const other = within(dialog).getByRole('checkbox', { name: 'I understand reading orders can move messages to a dead-letter queue.' });
    expect(within(dialog).getAllByRole('checkbox')).toHaveLength(2); // orders-dlq2 cannot dead-letter
    expect([all.hasAttribute('disabled'), alone.hasAttribute('disabled')]).toEqual([true, true]);
    fireEvent.click(own);
    expect([all.hasAttribute('disabled'), alone.hasAttribute('disabled')]).toEqual([true, false]);
    fireEvent.click(other);
    expect(all.hasAttribute('disabled')).toBe(false);
    fireEvent.click(all);
    await screen.findByTestId('inspect-report');
    expect(inspectCalls()).toEqual([{ connectionId: 'c1', queueId: dlq.id, acceptSideEffects: true }]);
  });

  it('a queue whose own read changes nothing is not analysed at once when a compared read changes its source queue', async () => {
    const stream = summary({ id: 'rabbitmq:%2F/orders.dead', name: 'orders.dead', kind: 'rabbitmq-stream', config: {}, isDeadLetterQueue: true, deadLetterSources: ['rabbitmq:%2F/orders'] });
    const work = rabbit('orders', { deadLetterTargets: [{ queueId: stream.id, queueName: 'orders.dead', via: 'policy' }] });
    queues = [work, stream];
    setup(queues);
    render(<QueueView connectionId="c1" queueId={stream.id} />);
    fireEvent.click(await screen.findByRole('button', { name: 'Analyse…' }));
    const dialog = await screen.findByRole('dialog');
    expect(inspectCalls()).toEqual([]);
    expect(within(dialog).getByRole('heading').textContent).toBe('Analysing this queue changes the queues compared with it');
    expect([...within(dialog).getByTestId('analyse-effects-compared').querySelectorAll('li')].map((li) => li.textContent)).toEqual([REQUEUE]);
    fireEvent.click(within(dialog).getByRole('button', { name: 'Analyse without the comparison' }));
    await screen.findByTestId('inspect-report');
    expect(inspectCalls()).toEqual([{ connectionId: 'c1', queueId: stream.id, acceptSideEffects: true, compareDeadLetter: false }]);
  });
});

// @vitest-environment jsdom
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cleanup, render, screen } from '@testing-library/react';
import fc from 'fast-check';
import { useStore } from '../store';
import { message } from '../test/fixtures';
import { annotatedLines } from './InspectMessagePanel';
import { MessageView } from './MessageView';

const HTML = '<img src=x onerror="window.__pwned=1">';

beforeEach(() => {
  // A saved connection with no inspect rules (built-in rules apply).
  useStore.setState({
    view: { screen: 'queue', connectionId: 'c1', queueId: 'rabbitmq:%2F/orders' },
    inspectRules: { c1: { status: 'ready', error: null, state: { connectionId: 'c1', settings: { queues: [] }, persisted: true, note: null, problem: null } } },
  });
});
afterEach(cleanup);

describe('annotatedLines', () => {
  it('prints JSON like JSON.stringify(v, null, 2) with each member line tagged by its path', () => {
    const v = { orderId: 'A-1', order: { status: 'paid', items: [{ sku: 'S1' }] } };
    const { lines, truncated } = annotatedLines(v, [{ path: 'body.order.status', class: 'mutable-state', why: 'status' }], ['body.orderId']);
    expect(lines.map((l) => l.text).join('\n')).toBe(JSON.stringify(v, null, 2));
    expect(truncated).toBe(false);
    expect(lines.find((l) => l.path === 'body.order.status')?.annotation?.class).toBe('mutable-state');
    expect(lines.find((l) => l.path === 'body.orderId')?.isKey).toBe(true);
    expect(lines.find((l) => l.path === 'body.order.items[0].sku')?.text).toBe('        "sku": "S1"');
  });

  it('never throws and stays bounded for arbitrary JSON', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 60 }), (v) => {
        const { lines } = annotatedLines(v, [], [], 300);
        expect(lines.length).toBeLessThanOrEqual(300);
      }),
      { numRuns: 200 },
    );
  });
});

describe('InspectMessagePanel in the message view', () => {
  it('highlights the key with the rule that found it and flags an embedded mutable order', () => {
    const body = JSON.stringify({ type: 'order.updated', order: { id: 'A-9', status: 'paid', shippingAddress: { line1: '1 Harbour St', city: 'Lisbon' }, items: [{ sku: 'S', qty: 1 }] } });
    render(<MessageView message={message('m1', body, { headers: { 'Idempotency-Key': 'A-9:update' } })} onClose={() => undefined} />);
    expect(screen.getByTestId('highlighted-key').textContent).toBe('A-9:update');
    expect(screen.getByTestId('highlighted-key').tagName).toBe('MARK');
    expect(screen.getByTestId('key-source').textContent).toBe('header Idempotency-Key');
    expect(screen.getAllByTestId('verdict-badge')[0]?.getAttribute('data-verdict')).toBe('flag');
    expect(screen.getByTestId('inspect-reasons').textContent).toMatch(/order\.status/);
    const statusLine = screen.getByTestId('annotated-body').querySelector('[data-path="body.order.status"]');
    expect(statusLine?.getAttribute('data-class')).toBe('mutable-state');
  });

  it('renders body text containing HTML as text in the annotated body', () => {
    const { container } = render(<MessageView message={message('m2', JSON.stringify({ orderId: 'A-1', note: HTML }), { properties: { messageId: 'A-1:charge' } })} onClose={() => undefined} />);
    expect(container.querySelector('img')).toBeNull();
    expect(screen.getByTestId('annotated-body').textContent).toContain('<img src=x');
    expect(screen.getByTestId('highlighted-key').textContent).toBe('A-1:charge');
  });
});

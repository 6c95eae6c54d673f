// @vitest-environment jsdom
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cleanup, render, screen } from '@testing-library/react';
import fc from 'fast-check';
import { useStore } from '../store';
import { message } from '../test/fixtures';
import { InspectCell } from './InspectBadges';
import { annotatedLines } from './InspectMessagePanel';
import { MessageView } from './MessageView';

const HTML = '<img src=x onerror="window.__pwned=1">';

beforeEach(() => {
  // A saved connection with no inspect rules (built-in rules apply).
  useStore.setState({
    view: { screen: 'queue', connectionId: 'c1', queueId: 'rabbitmq:%2F/orders' },
    inspectRules: { c1: { status: 'ready', error: null, state: { connectionId: 'c1', settings: { queues: [] }, persisted: true, note: null, problem: null, brokerVersion: null } } },
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

  it('shows a bidi override in the key and the annotated body as an escape, not reordered text', () => {
    // U+202E would display the key "\u202egnp.exe" as "exe.png" (ui-pass).
    const key = 'A-7:\u202egnp.exe';
    render(<MessageView message={message('m3', JSON.stringify({ orderId: 'A-7', note: 'x\u202ey' }), { properties: { messageId: key } })} onClose={() => undefined} />);
    expect(screen.getByTestId('highlighted-key').textContent).toBe('A-7:\\u202egnp.exe');
    const body = screen.getByTestId('annotated-body').textContent;
    expect(body).toContain('x\\u202ey');
    expect(body).not.toMatch(/\u202e/);
  });
});

describe('broker version from the connection (size limit)', () => {
  // 20 MiB: over RabbitMQ 4.x's default max_message_size (16 MiB), under 3.8–3.13's (128 MiB).
  const big = (id: string) => {
    const m = message(id, JSON.stringify({ orderId: 'A-1' }), { properties: { messageId: 'A-1:charge' } });
    return { ...m, body: { ...m.body, sizeBytes: 20 * 1024 * 1024 } };
  };
  const withVersion = (brokerVersion: string | null) =>
    useStore.setState({ inspectRules: { c1: { status: 'ready', error: null, state: { connectionId: 'c1', settings: { queues: [] }, persisted: true, note: null, problem: null, brokerVersion } } } });

  it('measures against the 128 MiB default when the connection reports RabbitMQ 3.13', () => {
    withVersion('3.13.7');
    const { container } = render(<MessageView message={big('v3')} onClose={() => undefined} />);
    expect(screen.getByTestId('inspect-panel').textContent).toMatch(/of at most 128(\.0)? MiB \(RabbitMQ 3\.13\.7 default max_message_size \(128 MiB\)\)/);
    // large (≥ 256 KiB) but within the limit: review, not flag
    expect(screen.getAllByTestId('verdict-badge')[0]?.getAttribute('data-verdict')).toBe('review');
    expect(container.textContent).not.toMatch(/over the limit/);
  });

  it('flags the same body as over the 16 MiB limit when the connection reports RabbitMQ 4', () => {
    withVersion('4.0.9');
    render(<MessageView message={big('v4')} onClose={() => undefined} />);
    expect(screen.getAllByTestId('verdict-badge')[0]?.getAttribute('data-verdict')).toBe('flag');
    expect(screen.getByTestId('inspect-reasons').textContent).toContain('over the limit of 16 MiB (RabbitMQ 4.0.9 default max_message_size (16 MiB))');
  });

  it('passes the version carried by the list rules to the list badges', () => {
    const rules = { keyRules: [], snapshotFields: [], queueIsSnapshot: false };
    render(<InspectCell message={big('list-v3')} rules={{ ...rules, brokerVersion: '3.12.0' }} />);
    expect(screen.getByTestId('verdict-badge').getAttribute('data-verdict')).toBe('review');
    cleanup();
    render(<InspectCell message={big('list-unknown')} rules={rules} />);
    expect(screen.getByTestId('verdict-badge').getAttribute('data-verdict')).toBe('flag');
  });
});

describe('the idempotency key in the Headers and Properties tables', () => {
  it('highlights the header row the key was read from, with the rule that found it, and no other row', () => {
    render(<MessageView message={message('h1', JSON.stringify({ orderId: 'A-9' }), { headers: { 'x-tenant': 'acme', 'Idempotency-Key': 'A-9:update' } })} onClose={() => undefined} />);
    const headers = screen.getByRole('region', { name: 'Headers / attributes' });
    const rows = headers.querySelectorAll('[data-testid="key-row"]');
    expect(rows).toHaveLength(1);
    const keyRow = rows[0] as HTMLElement;
    expect(keyRow.querySelector('th')?.textContent).toBe('Idempotency-Key');
    expect(keyRow.querySelector('mark')?.textContent).toBe('A-9:update');
    expect(keyRow.className).toBe('key-row');
    expect(keyRow.querySelector('[data-testid="key-row-rule"]')?.textContent).toBe('idempotency key · header Idempotency-Key (built-in rule)');
    expect(screen.getByRole('region', { name: 'Properties' }).querySelector('[data-testid="key-row"]')).toBeNull();
  });

  it('names the user rule and its queue pattern for a key from a custom header, and marks the AMQP message_id property when that is the key', () => {
    useStore.setState({
      inspectRules: { c1: { status: 'ready', error: null, state: { connectionId: 'c1', settings: { queues: [{ match: 'orders', keyRules: [{ kind: 'header', name: 'x-op-key' }], snapshotFields: [] }] }, persisted: true, note: null, problem: null, brokerVersion: null } } },
    } as never);
    render(<MessageView message={message('h2', '{"orderId":"A-1"}', { headers: { 'x-op-key': 'A-1:ship' }, properties: { messageId: 'A-1:other' } })} onClose={() => undefined} />);
    const keyRow = screen.getByTestId('key-row');
    expect(keyRow.closest('section')?.getAttribute('aria-label')).toBe('Headers / attributes');
    expect(screen.getByTestId('key-row-rule').textContent).toBe('idempotency key · header x-op-key (your rule for “orders”)');
    cleanup();
    useStore.setState({ inspectRules: { c1: { status: 'ready', error: null, state: { connectionId: 'c1', settings: { queues: [] }, persisted: true, note: null, problem: null, brokerVersion: null } } } });
    render(<MessageView message={message('h3', '{"orderId":"A-1"}', { properties: { messageId: 'A-1:charge', contentType: 'application/json' } })} onClose={() => undefined} />);
    const prop = screen.getByTestId('key-row');
    expect(prop.closest('section')?.getAttribute('aria-label')).toBe('Properties');
    expect(prop.querySelector('mark')?.textContent).toBe('A-1:charge');
    expect(screen.getByTestId('key-row-rule').textContent).toBe('idempotency key · AMQP message_id (built-in rule)');
  });

  it('renders a header value holding HTML as text', () => {
    const { container } = render(<MessageView message={message('h4', '{}', { headers: { 'Idempotency-Key': HTML } })} onClose={() => undefined} />);
    expect(container.querySelector('img')).toBeNull();
    expect(screen.getByTestId('key-row').querySelector('mark')?.textContent).toBe(HTML);
  });
});

describe('panel wording', () => {
  it('does not repeat the verdict name after its label ("random key: opaque-random: …")', () => {
    render(<MessageView message={message('w1', '{"a":1}', { headers: { 'Idempotency-Key': '7f3c9a1e-5b2d-4c8e-9f0a-1b2c3d4e5f60' } })} onClose={() => undefined} />);
    const line = screen.getByTestId('key-reason').parentElement?.textContent ?? '';
    expect(line).toMatch(/^random key: /);
    expect(line).not.toContain('opaque-random:');
  });

  it('names a content-based SQS deduplication id as such in the message details', () => {
    const meta = { messageDeduplicationId: 'a'.repeat(64), messageGroupId: 'g1' };
    const { unmount } = render(<MessageView message={message('c1', '{"orderId":"A-1"}', { queueId: 'sqs:http://127.0.0.1:4566/000000000000/orders.fifo', meta: { ...meta, deduplicationIdSource: 'content' } })} onClose={() => undefined} />);
    expect(screen.getByText('Deduplication id (content-based: SHA-256 of the body)')).toBeTruthy();
    unmount();
    render(<MessageView message={message('c2', '{"orderId":"A-1"}', { queueId: 'sqs:http://127.0.0.1:4566/000000000000/orders.fifo', meta })} onClose={() => undefined} />);
    expect(screen.getByText('Deduplication id')).toBeTruthy();
  });

  it('says "1 field classified" for one field', () => {
    render(<MessageView message={message('w2', JSON.stringify({ orderId: 'A-1' }), { properties: { messageId: 'A-1:charge' } })} onClose={() => undefined} />);
    const summaryText = screen.getByTestId('annotated-body').parentElement?.querySelector('summary')?.textContent ?? '';
    expect(summaryText).toBe('Body with field annotations (1 field classified)');
  });
});

// @vitest-environment jsdom
import { afterEach, describe, expect, it, vi } from 'vitest';
import { cleanup, fireEvent, render, screen } from '@testing-library/react';
import { PeekConfirm } from './PeekConfirm';

afterEach(cleanup);

const effects = [
  { kind: 'delivery-count' as const, description: 'Each peek adds 1 to x-delivery-count.' },
  { kind: 'may-dead-letter' as const, description: 'At x-delivery-limit 3 a peek dead-letters the message to orders.dlq.' },
];

describe('PeekConfirm', () => {
  it('lists every declared side effect', () => {
    render(<PeekConfirm queueName="orders" capabilities={{ peekSideEffects: effects, peekMayDeadLetter: true }} action="Peek 50 messages" onConfirm={() => undefined} onCancel={() => undefined} />);
    expect(screen.getByRole('dialog', { name: 'Peeking this queue changes it' })).toBeTruthy();
    expect(screen.getByText('Each peek adds 1 to x-delivery-count.')).toBeTruthy();
    expect(screen.getByText(/dead-letters the message to orders\.dlq/)).toBeTruthy();
  });

  it('keeps the action disabled until the dead-letter risk is explicitly accepted', () => {
    const onConfirm = vi.fn();
    render(<PeekConfirm queueName="orders" capabilities={{ peekSideEffects: effects, peekMayDeadLetter: true }} action="Peek 50 messages" onConfirm={onConfirm} onCancel={() => undefined} />);
    const button = screen.getByRole<HTMLButtonElement>('button', { name: 'Peek 50 messages' });
    expect(button.disabled).toBe(true);
    fireEvent.click(button);
    expect(onConfirm).not.toHaveBeenCalled();
    fireEvent.click(screen.getByRole('checkbox', { name: /can move messages to the dead-letter queue/ }));
    expect(button.disabled).toBe(false);
    fireEvent.click(button);
    expect(onConfirm).toHaveBeenCalledTimes(1);
  });

  it('treats an unknown dead-letter risk (null) like a known one', () => {
    render(<PeekConfirm queueName="orders" capabilities={{ peekSideEffects: effects.slice(0, 1), peekMayDeadLetter: null }} action="Peek" onConfirm={() => undefined} onCancel={() => undefined} />);
    expect(screen.getByRole<HTMLButtonElement>('button', { name: 'Peek' }).disabled).toBe(true);
    expect(screen.getByRole('checkbox', { name: /might move messages/ })).toBeTruthy();
  });

  it('needs no checkbox when the broker says a peek cannot dead-letter', () => {
    const onConfirm = vi.fn();
    render(<PeekConfirm queueName="orders" capabilities={{ peekSideEffects: effects.slice(0, 1), peekMayDeadLetter: false }} action="Peek" onConfirm={onConfirm} onCancel={() => undefined} />);
    expect(screen.queryByRole('checkbox')).toBeNull();
    fireEvent.click(screen.getByRole('button', { name: 'Peek' }));
    expect(onConfirm).toHaveBeenCalledTimes(1);
  });

  it('cancels with the Cancel button and with Escape', () => {
    const onCancel = vi.fn();
    render(<PeekConfirm queueName="orders" capabilities={{ peekSideEffects: effects, peekMayDeadLetter: true }} action="Peek" onConfirm={() => undefined} onCancel={onCancel} />);
    fireEvent.click(screen.getByRole('button', { name: 'Cancel' }));
    fireEvent.keyDown(document, { key: 'Escape' });
    expect(onCancel).toHaveBeenCalledTimes(2);
  });
});

// @vitest-environment jsdom
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { cleanup, fireEvent, render, screen } from '@testing-library/react';
import { gzipSync, strToU8 } from 'fflate';
import { useStore } from '../store';
import { message } from '../test/fixtures';
import { BodyViewer } from './BodyViewer';
import { MessageView } from './MessageView';

const HTML = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script><b>bold</b>';

beforeEach(() => {
  useStore.setState({ preferences: { ...useStore.getState().preferences, bodyTab: 'pretty' } });
});
afterEach(cleanup);

function b64(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s);
}

describe('BodyViewer', () => {
  it('renders an HTML body as text: no element is created from it', () => {
    const { container } = render(<BodyViewer message={message('m1', HTML)} />);
    expect(container.querySelector('img')).toBeNull();
    expect(container.querySelector('script')).toBeNull();
    expect(container.querySelector('b')).toBeNull();
    expect(screen.getByTestId('body-text').textContent).toBe(HTML);
    expect((window as unknown as { __pwned?: number }).__pwned).toBeUndefined();
  });

  it('keeps HTML inside JSON and headers as text too', () => {
    const body = JSON.stringify({ note: HTML });
    const { container } = render(<MessageView message={message('m2', body, { headers: { 'x-html': HTML }, meta: { failedReason: HTML } })} onClose={() => undefined} />);
    expect(container.querySelector('img')).toBeNull();
    expect(container.querySelector('script')).toBeNull();
    expect(container.textContent).toContain('<img src=x onerror=');
  });

  it('shows the decoding layers and the pretty JSON', () => {
    const gz = gzipSync(strToU8('{"orderId":"A-1001","n":12345678901234567890}'));
    render(<BodyViewer message={message('m3', b64(gz))} />);
    expect(screen.getByTestId('body-layers').textContent).toBe('base64 → gzip → JSON');
    expect(screen.getByTestId('body-text').textContent).toBe('{\n  "orderId": "A-1001",\n  "n": 12345678901234567890\n}');
  });

  it('switches to Raw and Hex', () => {
    render(<BodyViewer message={message('m4', '{"a":1}')} />);
    fireEvent.click(screen.getByRole('tab', { name: 'Raw' }));
    expect(screen.getByTestId('body-text').textContent).toBe('{"a":1}');
    fireEvent.click(screen.getByRole('tab', { name: 'Hex' }));
    expect(screen.getByTestId('body-text').textContent).toBe('00000000  7b 22 61 22 3a 31 7d                              |{"a":1}|');
    expect(useStore.getState().preferences.bodyTab).toBe('hex');
  });

  it('explains binary bodies and reports malformed JSON', () => {
    const bin = message('m5', '', { body: { encoding: 'base64', data: b64(new Uint8Array([0xff, 0x00, 0xfe])), sizeBytes: 3, truncated: false } });
    const { unmount } = render(<BodyViewer message={bin} />);
    expect(screen.getByText(/Binary body/)).toBeTruthy();
    unmount();
    render(<BodyViewer message={message('m6', '{"a": 1,', { body: { encoding: 'utf8', data: '{"a": 1,', sizeBytes: 5000, truncated: true } })} />);
    expect(screen.getByText(/Not valid JSON/)).toBeTruthy();
    expect(screen.getByText(/Truncated/)).toBeTruthy();
  });

  it('does not put a 1 MiB body into the DOM at once', () => {
    const items = Array.from({ length: 12_000 }, (_, i) => ({ id: i, name: `item ${i}`, tags: ['a', 'b'] }));
    const big = JSON.stringify(items);
    expect(big.length).toBeGreaterThan(500_000);
    const t0 = performance.now();
    const { container } = render(<BodyViewer message={message('m7', big)} />);
    const ms = performance.now() - t0;
    expect(container.querySelector('.body-virtual')).not.toBeNull();
    const lines = container.querySelectorAll('.vline').length;
    expect(lines).toBeLessThan(200);
    expect(container.textContent.length).toBeLessThan(50_000);
    expect(ms).toBeLessThan(5000);
    // Raw text is capped with "Show all".
    fireEvent.click(screen.getByRole('tab', { name: 'Raw' }));
    expect(screen.getByTestId('body-text').textContent).toHaveLength(100_000);
    fireEvent.click(screen.getByRole('button', { name: 'Show all' }));
    expect(screen.getByTestId('body-text').textContent).toHaveLength(big.length);
  });

  it('shows bidi overrides and terminal escapes as visible escapes, and copies the original', async () => {
    // U+202E displays "gnp.exe" as "exe.png"; ESC would render as an empty box.
    const body = 'file \u202egnp.exe\u202c \x1b[31mRED\x1b[0m\tok';
    const writes: string[] = [];
    Object.defineProperty(navigator, 'clipboard', { value: { writeText: (t: string) => Promise.resolve(void writes.push(t)) }, configurable: true });
    const { container } = render(<MessageView message={message('m8', body, { headers: { 'x-\u202ename': 'v\u202ealue' } })} onClose={() => undefined} />);
    const shown = screen.getByTestId('body-text').textContent;
    expect(shown).toBe('file \\u202egnp.exe\\u202c \\x1b[31mRED\\x1b[0m\tok');
    expect(shown).not.toMatch(/[\u202e\u202c\x1b]/);
    expect(container.querySelectorAll('[data-testid="body-text"] .hidden-char')).toHaveLength(4);
    // Headers: names and values.
    const headers = screen.getByRole('region', { name: 'Headers / attributes' });
    expect(headers.textContent).toContain('x-\\u202ename');
    expect(headers.textContent).toContain('v\\u202ealue');
    expect(headers.textContent).not.toMatch(/\u202e/);
    fireEvent.click(screen.getByRole('tab', { name: 'Raw' }));
    expect(screen.getByTestId('body-text').textContent).toBe('file \\u202egnp.exe\\u202c \\x1b[31mRED\\x1b[0m\tok');
    fireEvent.click(screen.getByRole('button', { name: 'Copy' }));
    await vi.waitFor(() => expect(writes).toEqual([body]));
  });

  it('shows hidden characters escaped in pretty JSON too', () => {
    render(<BodyViewer message={message('m9', JSON.stringify({ file: '\u202egnp.exe' }))} />);
    expect(screen.getByTestId('body-text').textContent).toBe('{\n  "file": "\\u202egnp.exe"\n}');
  });
});

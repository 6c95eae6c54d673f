// @vitest-environment jsdom
import { afterEach, describe, expect, it } from 'vitest';
import { cleanup, render, screen } from '@testing-library/react';
import { message } from '../test/fixtures';
import { MessageView } from './MessageView';

afterEach(cleanup);

describe('MessageView: a stream entry with binary field names', () => {
  it('shows each field under its own escaped key, and the exact names, as text', () => {
    // What streamEntryMessage returns for XADD s * <ff>a v1 <fe>a v2 <ff><img…> x body hi.
    const m = message('1-0', 'hi', {
      queueId: 'stream:s',
      queueName: 's',
      headers: { '\\xffa': 'v1', '\\xfea': 'v2', '\\xff<img src=x onerror="window.__pwned=1">': 'x' },
      properties: {
        bodyField: 'body',
        streamFields: [
          { name: { base64: '/2E=' }, key: '\\xffa' },
          { name: { base64: '/mE=' }, key: '\\xfea' },
          { name: { base64: '/zxpbWcgc3JjPXggb25lcnJvcj0id2luZG93Ll9fcHduZWQ9MSI+' }, key: '\\xff<img src=x onerror="window.__pwned=1">' },
          { name: 'body', key: null },
        ],
      },
    });
    const { container } = render(<MessageView message={m} onClose={() => undefined} />);
    const headers = screen.getByRole('region', { name: 'Headers / attributes' });
    const keys = [...headers.querySelectorAll('th')].map((th) => th.textContent);
    expect(keys).toEqual(['\\xffa', '\\xfea', '\\xff<img src=x onerror="window.__pwned=1">']);
    expect(container.querySelector('img')).toBeNull();
    expect(screen.getByRole('region', { name: 'Properties' }).textContent).toContain('"key":"\\\\xfea"');
  });
});

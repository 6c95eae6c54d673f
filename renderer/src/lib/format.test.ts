import { describe, expect, it } from 'vitest';
import { absoluteTime, ago, bytes, count, duration, headerValueText, matchesFilter, relativeTime, shortReason } from './format';

describe('format', () => {
  const now = Date.UTC(2026, 10, 29, 12, 0, 0);
  it('relative times', () => {
    expect(relativeTime(now - 30_000, now)).toBe('30 sec. ago');
    expect(relativeTime(now - 3 * 3600_000, now)).toBe('3 hr. ago');
    expect(relativeTime(now + 5 * 60_000, now)).toBe('in 5 min.');
    expect(relativeTime(now - 400, now)).toBe('now');
    expect(relativeTime(null, now)).toBe('—');
  });
  it('read ages ("read 12 s ago")', () => {
    expect(ago(now - 500, now)).toBe('just now');
    expect(ago(now + 3000, now)).toBe('just now');
    expect(ago(now - 12_400, now)).toBe('12 s ago');
    expect(ago(now - 3 * 60_000 - 59_000, now)).toBe('3 min ago');
    expect(ago(now - 2 * 3600_000, now)).toBe('2 h ago');
    expect(ago(now - 4 * 86_400_000, now)).toBe('4 d ago');
    expect(ago(null, now)).toBe('—');
  });
  it('absolute times in UTC', () => {
    expect(absoluteTime(now + 5)).toBe('2026-11-29 12:00:00.005 UTC');
    expect(absoluteTime(undefined)).toBe('—');
  });
  it('durations, sizes and counts; null stays distinct from 0', () => {
    expect(duration(850)).toBe('850 ms');
    expect(duration(12_345)).toBe('12 s');
    expect(duration(245_000)).toBe('4 min 5 s');
    expect(duration(2 * 3600_000 + 180_000)).toBe('2 h 3 min');
    expect(bytes(512)).toBe('512 B');
    expect(bytes(1536)).toBe('1.5 KiB');
    expect(bytes(1024 * 1024)).toBe('1.0 MiB');
    expect(count(1234567)).toBe('1,234,567');
    expect(count(0)).toBe('0');
    expect(count(null)).toBe('—');
  });
  it('short failure reasons: first line, cut', () => {
    expect(shortReason('HTTP 503\n    at charge (pay.js:1)')).toBe('HTTP 503');
    expect(shortReason('x'.repeat(100), 10)).toBe('xxxxxxxxx…');
    expect(shortReason(null)).toBe('');
  });
  it('header values as text', () => {
    expect(headerValueText('acme')).toBe('acme');
    expect(headerValueText({ a: [1, true, null] })).toBe('{"a":[1,true,null]}');
  });
  it('queue filter: substring or glob, case-insensitive', () => {
    expect(matchesFilter('Orders.DLQ', 'dlq')).toBe(true);
    expect(matchesFilter('orders.dlq', 'orders.*')).toBe(true);
    expect(matchesFilter('ordersXdlq', 'orders.*')).toBe(false);
    expect(matchesFilter('payments', 'orders')).toBe(false);
    expect(matchesFilter('anything', '  ')).toBe(true);
    expect(matchesFilter('a(b)', 'a(b*')).toBe(true);
  });
});

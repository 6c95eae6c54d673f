import { describe, expect, it } from 'vitest';
import { EXIT, EXIT_CODES_HELP, exitCodeFor } from './exit-codes';

describe('exitCodeFor', () => {
  it('puts broker errors (e.g. an endpoint that is not SQS) with connection failures, not with bugs', () => {
    expect(exitCodeFor('BROKER_ERROR')).toBe(EXIT.CONNECTION);
    expect(exitCodeFor('HOST_UNREACHABLE')).toBe(EXIT.CONNECTION);
    expect(exitCodeFor('INTERNAL')).toBe(EXIT.UNEXPECTED);
    expect(EXIT_CODES_HELP).toMatch(/3 {4}connection failed or the broker refused[^]*an endpoint that is not the\s+expected broker/);
  });
});

describe('EXIT.INCOMPLETE', () => {
  it('has a code of its own, listed in the --help table', () => {
    const codes = Object.values(EXIT);
    expect(new Set(codes).size).toBe(codes.length);
    expect(EXIT.INCOMPLETE).toBe(9);
    expect(EXIT_CODES_HELP).toMatch(/\n {2}9 {4}incomplete: --fail-on found nothing to fail on, but only part of the queue\n/);
    // Every code is in the table, in order.
    const listed = [...EXIT_CODES_HELP.matchAll(/^ {2}(\d+) /gm)].map((m) => Number(m[1]));
    expect(listed).toEqual([...codes].sort((a, b) => a - b));
  });
});

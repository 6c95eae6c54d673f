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

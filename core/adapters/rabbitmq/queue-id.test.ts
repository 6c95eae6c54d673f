import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { QueuescopeError } from '../../../shared/domain';
import { decodeQueueId, encodeQueueId } from './queue-id';

function code(fn: () => unknown): string | null {
  try {
    fn();
    return null;
  } catch (e) {
    return e instanceof QueuescopeError ? e.code : 'NOT_A_QUEUESCOPE_ERROR';
  }
}

describe('RabbitMQ queue ids', () => {
  it('encodes the default vhost as %2F', () => {
    expect(encodeQueueId({ vhost: '/', name: 'orders.work' })).toBe('rabbitmq:%2F/orders.work');
    expect(encodeQueueId({ vhost: 'prod', name: 'a/b c' })).toBe('rabbitmq:prod/a%2Fb%20c');
  });

  it('round-trips any vhost and name (≤ 255 UTF-8 bytes)', () => {
    const name = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 60 });
    fc.assert(
      fc.property(name, name, (vhost, n) => {
        expect(decodeQueueId(encodeQueueId({ vhost, name: n }))).toEqual({ vhost, name: n });
      }),
    );
  });

  it('accepts lower-case percent escapes', () => {
    expect(decodeQueueId('rabbitmq:%2f/work')).toEqual({ vhost: '/', name: 'work' });
  });

  it.each([
    ['stream:orders'],
    ['rabbitmq:'],
    ['rabbitmq:%2F'],
    ['rabbitmq:/work'],
    ['rabbitmq:%2F/'],
    ['rabbitmq:%2F/a/b'],
    ['rabbitmq:%2F/%E0%A4%A'],
    ['rabbitmq:%2F/%ZZ'],
    ['rabbitmq:%2F/a b'],
    ['rabbitmq:%2F/%ED%A0%80'],
    [`rabbitmq:%2F/${'x'.repeat(256)}`],
  ])('rejects %s as INVALID_INPUT', (id) => {
    expect(code(() => decodeQueueId(id))).toBe('INVALID_INPUT');
  });

  it('never throws anything but INVALID_INPUT on arbitrary input', () => {
    fc.assert(
      fc.property(fc.string(), (s) => {
        const c = code(() => decodeQueueId(`rabbitmq:${s}`));
        expect(c === null || c === 'INVALID_INPUT').toBe(true);
      }),
    );
  });
});

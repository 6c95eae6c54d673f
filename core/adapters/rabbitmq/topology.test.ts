import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { buildTopology, capabilitiesFor, effectiveSettings, resolveDeadLetterTargets, topicMatches, type RawBinding, type RawExchange, type RawQueue } from './topology';

/** Reference topic matcher: binding words → regex over the dot-joined key, written independently. */
function refTopic(binding: string, key: string): boolean {
  const words = binding === '' ? [] : binding.split('.');
  const keyWords = key === '' ? [] : key.split('.');
  const esc = (w: string): string => w.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  // Encode each key word as "<word>/" so words are delimited unambiguously.
  const subject = keyWords.map((w) => `${w.replace(/[/\\]/g, '\\$&')}/`).join('');
  const parts = words.map((w) => (w === '#' ? '(?:(?:[^/\\\\]|\\\\.)*/)*' : w === '*' ? '(?:[^/\\\\]|\\\\.)*/' : `${esc(w.replace(/[/\\]/g, '\\$&'))}/`));
  return new RegExp(`^${parts.join('')}$`).test(subject);
}

describe('topicMatches (AMQP topic exchange semantics)', () => {
  it.each([
    ['orders.*', 'orders.eu', true],
    ['orders.*', 'orders', false],
    ['orders.*', 'orders.eu.failed', false],
    ['orders.#', 'orders', true],
    ['orders.#', 'orders.eu.failed', true],
    ['#', '', true],
    ['#', 'a.b.c', true],
    ['*', '', false],
    ['*', 'a', true],
    ['', '', true],
    ['', 'a', false],
    ['#.failed', 'failed', true],
    ['#.failed', 'orders.eu.failed', true],
    ['#.failed', 'orders.failed.not', false],
    ['a.#.b', 'a.b', true],
    ['a.#.b', 'a.x.y.b', true],
    ['a.*.#.b', 'a.b', false],
    ['*.*', 'a.', true],
    ['#.#', 'a.b', true],
    ['orders.eu', 'orders.eu', true],
    ['orders.eu', 'orders.EU', false],
  ])('%s vs %s → %s', (binding, key, expected) => {
    expect(topicMatches(binding, key)).toBe(expected);
  });

  it('agrees with an independent regex reference', () => {
    const word = fc.constantFrom('a', 'b', 'orders', '', 'x\\y');
    const pword = fc.oneof(word, fc.constant('*'), fc.constant('#'));
    const key = fc.array(word, { maxLength: 5 }).map((w) => w.join('.'));
    const binding = fc.array(pword, { maxLength: 5 }).map((w) => w.join('.'));
    fc.assert(fc.property(binding, key, (b, k) => topicMatches(b, k) === refTopic(b, k)), { numRuns: 2000 });
  });
});

const q = (name: string, args: Record<string, unknown> = {}, policyDefinition: Record<string, unknown> = {}, policy: string | null = null, type = 'classic'): RawQueue => ({
  name,
  type,
  durable: true,
  autoDelete: false,
  exclusive: false,
  state: 'running',
  policy,
  arguments: args,
  policyDefinition,
  messagesReady: 0,
  messagesUnacknowledged: 0,
  messages: 0,
  consumers: 0,
});
const ex = (name: string, type: string, args: Record<string, unknown> = {}): RawExchange => ({ name, type, arguments: args });
const bind = (source: string, destination: string, routingKey: string, destinationType: 'queue' | 'exchange' = 'queue'): RawBinding => ({ source, destination, destinationType, routingKey, arguments: {} });

describe('effectiveSettings', () => {
  it('lets arguments win for the dead-letter exchange and the lower value win for TTL / length / delivery limit', () => {
    const s = effectiveSettings(
      q('w', { 'x-dead-letter-exchange': 'arg-dlx', 'x-message-ttl': 5000, 'x-max-length': 100, 'x-delivery-limit': 10 }, { 'dead-letter-exchange': 'pol-dlx', 'dead-letter-routing-key': 'pol-key', 'message-ttl': 1000, 'max-length': 500, 'delivery-limit': 3 }),
    );
    expect(s.deadLetterExchange).toEqual({ value: 'arg-dlx', source: 'argument' });
    expect(s.deadLetterRoutingKey).toEqual({ value: 'pol-key', source: 'policy' });
    expect(s.messageTtlMs).toEqual({ value: 1000, source: 'policy' });
    expect(s.maxLength).toEqual({ value: 100, source: 'argument' });
    expect(s.deliveryLimit).toEqual({ value: 3, source: 'policy' });
  });

  it('ignores values of the wrong type', () => {
    const s = effectiveSettings(q('w', { 'x-message-ttl': '5000', 'x-dead-letter-exchange': 42 }));
    expect(s.messageTtlMs).toBeNull();
    expect(s.deadLetterExchange).toBeNull();
  });
});

describe('resolveDeadLetterTargets', () => {
  const vhost = '/';
  it('resolves the default exchange to the queue named by the routing key, or reports it missing', () => {
    const work = q('work', { 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': 'work.dlq' });
    const topo = buildTopology(vhost, [work, q('work.dlq')], [ex('', 'direct')], []);
    expect(resolveDeadLetterTargets(work, topo)).toMatchObject([{ queueId: 'rabbitmq:%2F/work.dlq', queueName: 'work.dlq' }]);
    const topo2 = buildTopology(vhost, [work], [ex('', 'direct')], []);
    expect(resolveDeadLetterTargets(work, topo2)[0]?.problem).toContain('dropped');
  });

  it('follows exchange-to-exchange bindings and alternate exchanges', () => {
    const work = q('work', { 'x-dead-letter-exchange': 'dlx', 'x-dead-letter-routing-key': 'k' });
    const topo = buildTopology(
      vhost,
      [work, q('via-e2e'), q('via-ae')],
      [ex('dlx', 'direct', { 'alternate-exchange': 'ae' }), ex('inner', 'fanout'), ex('ae', 'fanout')],
      [bind('dlx', 'inner', 'k', 'exchange'), bind('inner', 'via-e2e', '')],
    );
    expect(resolveDeadLetterTargets(work, topo).map((t) => t.queueName)).toEqual(['via-e2e']);
    const other = q('other', { 'x-dead-letter-exchange': 'dlx', 'x-dead-letter-routing-key': 'nope' });
    const targets = resolveDeadLetterTargets(other, buildTopology(vhost, [other, q('via-e2e'), q('via-ae')], topo.exchanges.values(), [bind('dlx', 'inner', 'k', 'exchange'), bind('inner', 'via-e2e', ''), bind('ae', 'via-ae', '')]));
    expect(targets.map((t) => t.queueName)).toEqual(['via-ae']);
    expect(targets[0]?.via).toContain("alternate exchange 'ae'");
  });

  it('says a headers exchange cannot be resolved statically', () => {
    const work = q('work', { 'x-dead-letter-exchange': 'hdr' });
    const t = resolveDeadLetterTargets(work, buildTopology(vhost, [work, q('d')], [ex('hdr', 'headers')], [bind('hdr', 'd', '')]));
    expect(t).toHaveLength(1);
    expect(t[0]?.queueId).toBeNull();
    expect(t[0]?.via).toContain('cannot be resolved statically');
    expect(t[0]?.problem).toBeUndefined();
  });

  it('flags a dead-letter cycle back into the same queue', () => {
    const work = q('work', { 'x-dead-letter-exchange': '' });
    const t = resolveDeadLetterTargets(work, buildTopology(vhost, [work], [ex('', 'direct')], []));
    expect(t[0]?.queueName).toBe('work');
    expect(t[0]?.problem).toContain('cycle');
  });

  it('survives loops of exchange-to-exchange bindings', () => {
    const work = q('work', { 'x-dead-letter-exchange': 'a', 'x-dead-letter-routing-key': 'k' });
    const topo = buildTopology(vhost, [work], [ex('a', 'fanout'), ex('b', 'fanout')], [bind('a', 'b', '', 'exchange'), bind('b', 'a', '', 'exchange')]);
    expect(resolveDeadLetterTargets(work, topo)[0]?.problem).toContain('no binding');
  });
});

describe('capabilitiesFor', () => {
  it('classic: destructive-read side effects, cannot dead-letter', () => {
    const c = capabilitiesFor('rabbitmq-classic', null);
    expect(c.peekSideEffects.map((s) => s.kind)).toEqual(['temporarily-invisible', 'redelivered-flag', 'reorders']);
    expect(c.peekMayDeadLetter).toBe(false);
    expect(c.canPageFromCursor).toBe(false);
  });
  it('quorum with a delivery limit (argument or policy) may dead-letter', () => {
    const c = capabilitiesFor('rabbitmq-quorum', effectiveSettings(q('w', {}, { 'delivery-limit': 3, 'dead-letter-exchange': 'dlx' })));
    expect(c.peekMayDeadLetter).toBe(true);
    expect(c.peekSideEffects.find((s) => s.kind === 'may-dead-letter')?.description).toContain('x-delivery-limit=3 allows 4 deliveries');
    expect(capabilitiesFor('rabbitmq-quorum', effectiveSettings(q('w'))).peekMayDeadLetter).toBe(false);
  });
  it('streams are non-destructive and pageable; unknown types are unknown', () => {
    expect(capabilitiesFor('rabbitmq-stream', null)).toMatchObject({ canPeekNonDestructively: true, peekSideEffects: [], peekMayDeadLetter: false, canPageFromCursor: true });
    expect(capabilitiesFor(null, null).peekMayDeadLetter).toBeNull();
  });
});

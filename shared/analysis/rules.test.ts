import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { msg } from './fixtures/corpus';
import { extractIdempotencyKey, readMessagePath } from './idempotency';
import { analyzeMessage } from './analyze';
import { inspectRulesSchema, keyRuleSchema, normalizeRules, queueRulesEntrySchema, resolveInspectRules } from './rules';

/** Messages of the first issue of a failed parse, or [] when it succeeded. */
function issues(value: unknown): string[] {
  const r = keyRuleSchema.safeParse(value);
  return r.success ? [] : r.error.issues.map((i) => i.message);
}

/** Rules the app's editor, the CLI docs and the tests have always used; they must stay valid. */
const VALID = [
  { kind: 'header', name: 'X-Request-Key' },
  { kind: 'header', name: 'Idempotency-Key' },
  { kind: 'jsonPath', path: 'body.id' },
  { kind: 'jsonPath', path: 'body.order.id' },
  { kind: 'jsonPath', path: 'body.items[0].sku' },
  { kind: 'jsonPath', path: 'body.__proto__' },
  { kind: 'jsonPath', path: 'headers.x-key' },
  { kind: 'jsonPath', path: 'properties.correlationId' },
  { kind: 'jsonPath', path: 'meta.messageGroupId' },
  { kind: 'jsonPath', path: 'id' },
  { kind: 'template', template: '{body.orderId}:{body.operation}' },
  { kind: 'template', template: '{body.orderId}:{meta.messageGroupId}' },
  { kind: 'template', template: 'order-{ body.orderId }' },
] as const;

describe('keyRuleSchema (one definition for the project file, connection profiles and normalizeRules)', () => {
  it('keeps every rule that worked before', () => {
    for (const rule of VALID) expect(keyRuleSchema.parse(rule), JSON.stringify(rule)).toEqual(rule);
    expect(inspectRulesSchema.parse({ keyRules: [...VALID] }).keyRules).toEqual(VALID);
  });

  it('refuses a JSONPath ($.orderId) in a profile entry, naming the path and how to write it', () => {
    const r = queueRulesEntrySchema.safeParse({ queue: 'orders*', rules: { keyRules: [{ kind: 'jsonPath', path: '$.orderId' }] } });
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.path).toEqual(['rules', 'keyRules', 0, 'path']);
    expect(r.error?.issues[0]?.message).toBe(
      '"$.orderId" is not a message path: a path is id or starts with body, headers, properties or meta (e.g. body.order.id, body.items[0].sku, headers.x-key); JSONPath such as $.orderId is not supported',
    );
  });

  it('refuses paths readMessagePath would not read as written', () => {
    for (const path of ['orderId', '$.orderId', 'body..id', 'body.', '.body.id', 'body.a{b}', 'id.x', 'body[1234567]', 'Body.id', 'payload.id']) {
      expect(issues({ kind: 'jsonPath', path }), path).toEqual([`"${path}" is not a message path: a path is id or starts with body, headers, properties or meta (e.g. body.order.id, body.items[0].sku, headers.x-key); JSONPath such as $.orderId is not supported`]);
    }
  });

  it('checks template placeholders and braces', () => {
    expect(issues({ kind: 'template', template: 'no placeholder' })).toEqual(['a template needs at least one {path} placeholder']);
    expect(issues({ kind: 'template', template: '{body.orderId:{body}' })).toEqual(['a template has an unmatched { or }']);
    expect(issues({ kind: 'template', template: '{body.a}}' })).toEqual(['a template has an unmatched { or }']);
    expect(issues({ kind: 'template', template: '{body.a}{}' })).toEqual(['a template has an unmatched { or }']);
    expect(issues({ kind: 'template', template: '{body.op}:{orderId}' })[0]).toMatch(/^placeholder \{orderId\} is not a message path: a path is id or starts with body/);
  });

  it('trims names, paths and templates', () => {
    expect(keyRuleSchema.parse({ kind: 'header', name: '  X-Key \t' })).toEqual({ kind: 'header', name: 'X-Key' });
    expect(keyRuleSchema.parse({ kind: 'jsonPath', path: ' body.order.id ' })).toEqual({ kind: 'jsonPath', path: 'body.order.id' });
    expect(keyRuleSchema.parse({ kind: 'template', template: ' {body.a}:{body.b} ' })).toEqual({ kind: 'template', template: '{body.a}:{body.b}' });
    expect(issues({ kind: 'header', name: '   ' })).toHaveLength(1);
  });

  it('refuses unknown members (a typo must not silently change a rule)', () => {
    expect(issues({ kind: 'jsonPath', path: 'body.id', pth: 'body.orderId' })).toEqual(['Unrecognized key: "pth"']);
    expect(issues({ kind: 'header', name: 'X-Key', caseSensitive: true })).toHaveLength(1);
  });

  // readMessagePath (shared/analysis/idempotency.ts) follows at most 13 steps after the root
  // (MAX_BODY_DEPTH 12 + 1) and reads nothing beyond; the schema must accept exactly what it reads.
  const name = fc.oneof(fc.stringMatching(/^[A-Za-z_$][A-Za-z0-9_$-]{0,7}$/), fc.constantFrom('order id', 'x-key', 'Ünïcode', '0', 'a b c'));
  const step = fc.oneof(name.map((n) => ({ name: n })), fc.integer({ min: 0, max: 3 }).map((i) => ({ index: i })));
  const pathCase = (minSteps: number, maxSteps: number) =>
    fc.record({ root: fc.constantFrom('body', 'headers', 'properties', 'meta'), first: name, rest: fc.array(step, { minLength: minSteps - 1, maxLength: maxSteps - 1 }) }).map(({ root, first, rest }) => {
      const steps = [{ name: first }, ...rest];
      let value: unknown = 'K-1';
      for (const s of [...steps].reverse()) {
        if ('index' in s) {
          const arr: unknown[] = new Array<unknown>(s.index + 1).fill('other');
          arr[s.index] = value;
          value = arr;
        } else value = { [s.name]: value };
      }
      const path = root + steps.map((s) => ('index' in s ? `[${String(s.index)}]` : `.${s.name}`)).join('');
      const message = root === 'body' ? msg({ body: value }) : msg({ [root]: value as Record<string, string> });
      return { path, message, steps: steps.length };
    });

  it('accepts a path exactly when readMessagePath reads it: up to 13 steps', () => {
    fc.assert(
      fc.property(pathCase(1, 13), ({ path, message }) => {
        expect(issues({ kind: 'jsonPath', path })).toEqual([]);
        expect(readMessagePath(message, path)).toBe('K-1');
        const rule = keyRuleSchema.parse({ kind: 'template', template: `{${path}}:x` });
        expect(extractIdempotencyKey(message, [rule])?.key).toBe('K-1:x');
      }),
      { numRuns: 300 },
    );
  });

  it('refuses a path deeper than readMessagePath reads, saying so', () => {
    fc.assert(
      fc.property(pathCase(14, 16), ({ path, message, steps }) => {
        expect(readMessagePath(message, path)).toBeUndefined();
        expect(issues({ kind: 'jsonPath', path })).toEqual([`"${path.slice(0, 80)}" is too deep: a message path has at most 13 steps after its root (it has ${String(steps)})`]);
        expect(issues({ kind: 'template', template: `{${path}}` })).toEqual([`placeholder ${`{${path}}`.slice(0, 80)} is too deep: a message path has at most 13 steps after its root (it has ${String(steps)})`]);
      }),
      { numRuns: 100 },
    );
  });
});

describe('normalizeRules / resolveInspectRules with the shared key-rule schema', () => {
  it('keeps valid rules (trimmed) and skips invalid ones', () => {
    const r = normalizeRules({
      keyRules: [{ kind: 'jsonPath', path: '$.orderId' }, { kind: 'header', name: ' X-Key ' }, { kind: 'template', template: '{body.a}}' }, { kind: 'jsonPath', path: 'body.id', extra: 1 }, { kind: 'jsonPath', path: 'body.orderId' }] as never,
    });
    expect(r.keyRules).toEqual([
      { kind: 'header', name: 'X-Key' },
      { kind: 'jsonPath', path: 'body.orderId' },
    ]);
  });

  it('never throws on untrusted rules and returns only rules the schema accepts', () => {
    const ruleish = fc.oneof(
      fc.anything(),
      fc.record({ kind: fc.constantFrom('header', 'jsonPath', 'template', 'regex'), name: fc.anything(), path: fc.oneof(fc.string(), fc.constantFrom('$.a', 'body.a', ' body.a ')), template: fc.oneof(fc.string(), fc.constantFrom('{body.a}', '{a}', '{{body.a}}')) }, { requiredKeys: ['kind'] }),
    );
    fc.assert(
      fc.property(fc.oneof(fc.anything(), fc.record({ keyRules: fc.array(ruleish, { maxLength: 60 }) })), (rules) => {
        const out = normalizeRules(rules as never);
        expect(out.keyRules.length).toBeLessThanOrEqual(50);
        for (const k of out.keyRules) expect(keyRuleSchema.parse(k)).toEqual(k);
      }),
      { numRuns: 300 },
    );
  });

  it('a profile entry with a JSONPath rule is skipped; analysis with such a rule falls back to the built-in rules', () => {
    const entries = [{ queue: 'orders*', rules: { keyRules: [{ kind: 'jsonPath', path: '$.orderId' }] } }, { queue: 'orders*', rules: { keyRules: [{ kind: 'header', name: ' X-Key ' }] } }];
    expect(resolveInspectRules(entries, 'orders.work').keyRules).toEqual([{ kind: 'header', name: 'X-Key' }]);
    const m = msg({ body: { orderId: 'A-1', idempotencyKey: 'k-9' }, headers: { 'x-key': 'H-1' } });
    expect(analyzeMessage(m, { rules: { keyRules: [{ kind: 'jsonPath', path: '$.orderId' }] } }).key?.source).toBe('body.idempotencyKey');
    expect(analyzeMessage(m, { rules: { keyRules: [{ kind: 'header', name: ' X-Key ' }] } }).key?.key).toBe('H-1');
  });
});

import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { msg } from './fixtures/corpus';
import { extractIdempotencyKey, readMessagePath } from './idempotency';
import { analyzeMessage } from './analyze';
import { compileSnapshotPattern, inspectRulesSchema, keyRuleSchema, normalizeRules, queueRulesEntrySchema, resolveInspectRules, snapshotFieldProblem, snapshotFieldSchema } from './rules';
import { inspectQueueConfigSchema, validateProjectConfig } from '../config/project-config';

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

/** The issue messages of one snapshot-field pattern in the project file / stored settings schema; [] when valid. */
function projectFilePatternIssues(pattern: unknown): string[] {
  const r = inspectQueueConfigSchema.safeParse({ match: 'orders*', snapshotFields: [pattern] });
  return r.success ? [] : r.error.issues.map((i) => i.message);
}
/** The same in a per-queue entry of the analysis rules. */
function entryPatternIssues(pattern: unknown): string[] {
  const r = queueRulesEntrySchema.safeParse({ queue: 'orders*', rules: { snapshotFields: [pattern] } });
  return r.success ? [] : r.error.issues.map((i) => i.message);
}
const HINT = 'a pattern names body fields by member names and indexes: order.status, order.* (every field of order), items[*].price (any element), ** (any depth, e.g. **.status), with or without a leading body.; JSONPath such as $.order is not supported';

describe('snapshotFields patterns: one check for the project file, stored settings and normalizeRules', () => {
  const ACCEPTED = ['order.*', 'items[*].price', '**', '**.status', 'items[*]', 'items[]', 'items[0].sku', 'body.order.*', 'body[*]', '[*].price', '__proto__', 'a.**.b.**.c', '*', 'order.$type', 'detail-type', 'a b.c'];
  const REFUSED: [string, string][] = [
    ['$.order', 'it starts with $, as JSONPath does'],
    ['$', 'it starts with $, as JSONPath does'],
    ['$[*].price', 'it starts with $, as JSONPath does'],
    ['order..status', 'it has an empty step: .. is JSONPath; ** matches any depth'],
    ['..status', 'it has an empty step: .. is JSONPath; ** matches any depth'],
    ['order.', 'it has an empty step: a leading or trailing .'],
    ['.order', 'it has an empty step: a leading or trailing .'],
    ['order*', 'the step "order*" has * inside a name: * (one step) and ** (any depth) stand alone'],
    ['items.*Id', 'the step "*Id" has * inside a name: * (one step) and ** (any depth) stand alone'],
    ['***', 'the step "***" has * inside a name: * (one step) and ** (any depth) stand alone'],
    ["items['price']", "the index ['price'] is not [*], [] or a number [n]"],
    ['items[?(@.price)]', 'the step "items[?(@" has an unmatched [ or ]'],
    ['items[01]', 'the index [01] is not [*], [] or a number [n]'],
    ['items[-1]', 'the index [-1] is not [*], [] or a number [n]'],
    ['items[0', 'the step "items[0" has an unmatched [ or ]'],
    ['items]', 'the step "items]" has an unmatched [ or ]'],
    ['body', 'it names the whole body: ** marks every field'],
    [Array.from({ length: 33 }, (_, i) => `a${String(i)}`).join('.'), 'it has more than 32 steps'],
    ['**.a.**.b.**.c.**.d.**.e', 'it has more than 4 **'],
  ];

  it('accepts the supported forms, trimmed, in the project file, stored settings and analysis entries', () => {
    for (const p of ACCEPTED) {
      expect(projectFilePatternIssues(p), p).toEqual([]);
      expect(entryPatternIssues(p), p).toEqual([]);
      expect(snapshotFieldProblem(p), p).toBeNull();
      expect(compileSnapshotPattern(p), p).not.toBeNull();
    }
    expect(inspectQueueConfigSchema.parse({ match: '*', snapshotFields: [' order.* '] }).snapshotFields).toEqual(['order.*']);
    expect(compileSnapshotPattern('body.items[*].price')).toEqual({ source: 'body.items[*].price', segs: ['items', '[]', 'price'] });
    expect(compileSnapshotPattern(' a.**.**.b ')).toEqual({ source: 'a.**.**.b', segs: ['a', '**', 'b'] });
  });

  it('refuses patterns the matcher cannot read as written, naming the pattern and the supported forms (the same message everywhere)', () => {
    for (const [p, why] of REFUSED) {
      const message = `"${p.slice(0, 80)}" is not a snapshot field pattern (${why}): ${HINT}`;
      expect(projectFilePatternIssues(p), p).toEqual([message]);
      expect(entryPatternIssues(p), p).toEqual([message]);
      expect(snapshotFieldProblem(p), p).toBe(message);
      expect(compileSnapshotPattern(p), p).toBeNull();
    }
  });

  it('a JSONPath in the project file is reported at its place', () => {
    expect(validateProjectConfig({ inspect: { queues: [{ match: 'orders*', snapshotFields: ['order.*', '$.order'] }] } })).toEqual({
      ok: false,
      issues: [{ path: 'inspect.queues[0].snapshotFields[1]', message: `"$.order" is not a snapshot field pattern (it starts with $, as JSONPath does): ${HINT}` }],
    });
    // As long as the analysis reads: longer patterns and more than 100 of them were dropped by normalizeRules.
    expect(projectFilePatternIssues(`a.${'b'.repeat(255)}`)).toHaveLength(1);
    expect(inspectQueueConfigSchema.safeParse({ match: '*', snapshotFields: Array.from({ length: 101 }, () => 'order.*') }).success).toBe(false);
  });

  it('normalizeRules skips refused patterns (never throws), trims the rest; the analysis ignores a JSONPath pattern', () => {
    const r = normalizeRules({ snapshotFields: ['$.order', ' order.* ', 'order..status', 7, null, '**.status'] as never });
    expect(r.snapshotFields).toEqual(['order.*', '**.status']);
    const m = msg({ body: { order: { id: 'A-1', status: 'paid' } } });
    expect(analyzeMessage(m, { rules: { snapshotFields: ['$.order'] } }).verdict).toBe('flag');
    expect(analyzeMessage(m, { rules: { snapshotFields: ['$.order', 'order.*'] } }).payload.label).toBe('ok (intentional snapshot: order.*)');
    expect(resolveInspectRules([{ queue: '*', rules: { snapshotFields: ['$.order'] } }, { queue: '*', rules: { snapshotFields: ['order'] } }], 'orders').snapshotFields).toEqual(['order']);
  });

  it('the schema accepts a pattern exactly when it compiles, and normalizeRules keeps exactly those', () => {
    const piece = fc.constantFrom('order', '*', '**', '[*]', '[]', '[3]', '[x]', '$', '.', '..', 'body', 'items', 'a*', ']', '[', ' ', 'é', '__proto__');
    fc.assert(
      fc.property(fc.oneof(fc.array(piece, { maxLength: 8 }).map((xs) => xs.join('')), fc.array(piece, { maxLength: 8 }).map((xs) => xs.join('.')), fc.string({ maxLength: 20 })), (p) => {
        const accepted = snapshotFieldSchema.safeParse(p).success;
        expect(accepted, p).toBe(compileSnapshotPattern(p) !== null);
        expect(normalizeRules({ snapshotFields: [p] }).snapshotFields, p).toEqual(accepted ? [p.trim()] : []);
      }),
      { numRuns: 500 },
    );
  });
});

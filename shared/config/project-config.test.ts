import { describe, expect, it } from 'vitest';
import { queueRulesEntrySchema } from '../analysis/rules';
import { inspectQueueConfigSchema, validateProjectConfig } from './project-config';

/** The issue messages of one key rule in the project file's schema; [] when valid. */
function projectFileIssues(rule: unknown): string[] {
  const r = inspectQueueConfigSchema.safeParse({ match: 'orders*', keyRules: [rule] });
  return r.success ? [] : r.error.issues.map((i) => i.message);
}

/** The issue messages of one key rule in a per-queue entry of the analysis rules; [] when valid. */
function entryIssues(rule: unknown): string[] {
  const r = queueRulesEntrySchema.safeParse({ queue: 'orders*', rules: { keyRules: [rule] } });
  return r.success ? [] : r.error.issues.map((i) => i.message);
}

const RULES: unknown[] = [
  { kind: 'header', name: 'X-Request-Key' },
  { kind: 'header', name: '  X-Request-Key  ' },
  { kind: 'header', name: ' ' },
  { kind: 'header', name: 'X-Key', note: 'typo' },
  { kind: 'jsonPath', path: 'body.order.id' },
  { kind: 'jsonPath', path: 'headers.x-key' },
  { kind: 'jsonPath', path: 'id' },
  { kind: 'jsonPath', path: '$.orderId' },
  { kind: 'jsonPath', path: 'orderId' },
  { kind: 'jsonPath', path: 'body..id' },
  { kind: 'jsonPath', path: `body${'.a'.repeat(14)}` },
  { kind: 'template', template: '{body.orderId}:{body.operation}' },
  { kind: 'template', template: 'no placeholder' },
  { kind: 'template', template: '{body.orderId:{body}' },
  { kind: 'template', template: '{orderId}:{body.op}' },
  { kind: 'regex', pattern: '.*' },
];

describe('key rules in the project file', () => {
  it('are validated exactly like rules saved with a connection (one schema, same messages)', () => {
    for (const rule of RULES) expect(projectFileIssues(rule), JSON.stringify(rule)).toEqual(entryIssues(rule));
    // The table covers both outcomes.
    expect(RULES.filter((r) => projectFileIssues(r).length === 0)).toHaveLength(6);
  });

  it('names the offending rule and explains message paths', () => {
    const r = validateProjectConfig({ inspect: { queues: [{ match: 'orders*', keyRules: [{ kind: 'header', name: 'X-Key' }, { kind: 'jsonPath', path: '$.orderId' }] }] } });
    expect(r).toEqual({
      ok: false,
      issues: [
        {
          path: 'inspect.queues[0].keyRules[1].path',
          message: '"$.orderId" is not a message path: a path is id or starts with body, headers, properties or meta (e.g. body.order.id, body.items[0].sku, headers.x-key); JSONPath such as $.orderId is not supported',
        },
      ],
    });
  });

  it('refuses a path deeper than the key extraction reads', () => {
    const deep = `body${'.a'.repeat(14)}`;
    const r = validateProjectConfig({ inspect: { queues: [{ match: '*', keyRules: [{ kind: 'jsonPath', path: deep }] }] } });
    expect(r).toEqual({ ok: false, issues: [{ path: 'inspect.queues[0].keyRules[0].path', message: `"${deep}" is too deep: a message path has at most 13 steps after its root (it has 14)` }] });
    expect(validateProjectConfig({ inspect: { queues: [{ match: '*', keyRules: [{ kind: 'jsonPath', path: `body${'.a'.repeat(13)}` }] }] } }).ok).toBe(true);
  });

  it('come back trimmed', () => {
    const r = validateProjectConfig({ inspect: { queues: [{ match: '*', keyRules: [{ kind: 'header', name: ' X-Key ' }, { kind: 'template', template: ' {body.a}-{ body.b } ' }] }] } });
    expect(r.ok && r.config.inspect.queues[0]?.keyRules).toEqual([
      { kind: 'header', name: 'X-Key' },
      { kind: 'template', template: '{body.a}-{ body.b }' },
    ]);
  });
});

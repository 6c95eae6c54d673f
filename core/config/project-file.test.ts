import { QueuescopeError } from '../../shared/domain';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { inspectSettingsFor, matchesQueuePattern } from '../../shared/config/project-config';
import { findProjectConfig, loadProjectConfig, parseProjectConfig } from './project-file';

describe('project config file', () => {
  it('finds the file upward and fills defaults', async () => {
    const root = mkdtempSync(join(tmpdir(), 'qs-cfg-'));
    const deep = join(root, 'a', 'b');
    mkdirSync(deep, { recursive: true });
    writeFileSync(join(root, 'queuescope.config.json'), JSON.stringify({ tune: { safetyFactor: 4 } }));
    expect(findProjectConfig(deep)).toBe(join(root, 'queuescope.config.json'));
    const loaded = await loadProjectConfig({ cwd: deep });
    expect(loaded.path).toBe(join(root, 'queuescope.config.json'));
    expect(loaded.config.tune.safetyFactor).toBe(4);
    expect(loaded.config.audit.suppress).toEqual([]);
    expect(loaded.config.inspect.queues).toEqual([]);
  });

  it('reads YAML and resolves inspect settings per queue', () => {
    const cfg = parseProjectConfig(
      ['inspect:', '  queues:', '    - match: "orders*"', '      keyRules:', '        - { kind: template, template: "{body.orderId}:{body.operation}" }', '      snapshotFields: ["order.*"]'].join('\n'),
      'queuescope.config.yaml',
    );
    const s = inspectSettingsFor(cfg, { name: 'orders-dlq', id: 'orders-dlq' });
    expect(s?.keyRules).toEqual([{ kind: 'template', template: '{body.orderId}:{body.operation}' }]);
    expect(s?.queueIsSnapshot).toBe(false);
    expect(inspectSettingsFor(cfg, { name: 'payments', id: 'payments' })).toBeNull();
  });

  it('names every invalid setting by its path', () => {
    const bad = JSON.stringify({ audit: { suppress: [{ rule: 'x', queue: 'q', reason: '' }] }, tune: { safetyFactor: 0 }, typo: 1 });
    expect(() => parseProjectConfig(bad, 'queuescope.config.json')).toThrow(/audit\.suppress\[0\]\.reason: a suppression needs a written reason/);
    expect(() => parseProjectConfig(bad, 'queuescope.config.json')).toThrow(/tune\.safetyFactor/);
    expect(() => parseProjectConfig(bad, 'queuescope.config.json')).toThrow(/typo/);
  });

  it('reports syntax errors with the file and line', () => {
    expect(() => parseProjectConfig('{ "audit": ', 'queuescope.config.json')).toThrow(/queuescope\.config\.json is not valid JSON/);
    expect(() => parseProjectConfig('audit:\n  severity: [a\n', 'queuescope.config.yaml')).toThrow(/not valid YAML \(line \d+\)/);
  });

  it('refuses key rules whose paths cannot match a message, naming them', () => {
    const cfg = (rule: string): string => JSON.stringify({ inspect: { queues: [{ match: 'orders*', keyRules: [JSON.parse(rule) as unknown] }] } });
    expect(() => parseProjectConfig(cfg('{"kind":"jsonPath","path":"$.orderId"}'), 't.json')).toThrow(/"\$\.orderId" is not a message path: a path is id or starts with body/);
    expect(() => parseProjectConfig(cfg('{"kind":"jsonPath","path":"orderId"}'), 't.json')).toThrow(/"orderId" is not a message path/);
    expect(() => parseProjectConfig(cfg('{"kind":"template","template":"{body.orderId:{body}"}'), 't.json')).toThrow(/unmatched \{ or \}/);
    expect(() => parseProjectConfig(cfg('{"kind":"template","template":"{orderId}:{body.op}"}'), 't.json')).toThrow(/placeholder \{orderId\} is not a message path/);
    for (const ok of ['{"kind":"jsonPath","path":"body.items[0].sku"}', '{"kind":"jsonPath","path":"headers.x-key"}', '{"kind":"jsonPath","path":"id"}', '{"kind":"template","template":"{body.orderId}:{meta.messageGroupId}"}']) {
      expect(() => parseProjectConfig(cfg(ok), 't.json')).not.toThrow();
    }
  });

  it('refuses a YAML alias bomb as invalid input naming the file (not an unexpected error)', () => {
    const levels = ['a: &a ["x","x","x","x","x","x","x","x","x"]'];
    for (let i = 1; i < 9; i++) levels.push(`${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [${Array.from({ length: 9 }, () => `*${String.fromCharCode(96 + i)}`).join(',')}]`);
    let err: unknown;
    try {
      parseProjectConfig(`${levels.join('\n')}\n`, 'bomb.yaml');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(QueuescopeError);
    expect(err).toMatchObject({ code: 'INVALID_INPUT', message: expect.stringMatching(/^bomb\.yaml cannot be used as YAML: .*alias/) as unknown });
  });

  it('refuses a missing explicit file', async () => {
    await expect(loadProjectConfig({ cwd: tmpdir(), explicitPath: 'nope/queuescope.config.json' })).rejects.toThrow(/does not exist/);
  });

  it('matches queue patterns with * only', () => {
    expect(matchesQueuePattern('*', 'anything')).toBe(true);
    expect(matchesQueuePattern('orders*', 'orders-dlq')).toBe(true);
    expect(matchesQueuePattern('*-dlq', 'orders-dlq')).toBe(true);
    expect(matchesQueuePattern('o*s*q', 'orders-dlq')).toBe(true);
    expect(matchesQueuePattern('a*a', 'a')).toBe(false);
    expect(matchesQueuePattern('orders.?', 'orders.x')).toBe(false);
    expect(matchesQueuePattern('orders', 'orders-dlq')).toBe(false);
  });
});

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { ProfileStore } from '../../core/services/profile-store';
import { inspectConfigSchema } from '../../shared/config/project-config';
import type { RedrivePlan } from '../../shared/redrive/types';
import { REDIS_URL, uniqueName } from './env';
import { runCli } from './fixtures/run-cli';

/**
 * The CLI redrive finds its idempotency-key rules as `inspect` does for the DLQ: the project file
 * found upward from the working folder (first "inspect.queues" entry matching the DLQ), else the
 * rules saved with the --profile connection, else the built-in ones. `--dedupe-by-key`, the
 * `key:` filter and the dry run's check of keys already waiting in the target use them, and the
 * plan says which ("Rules: …"). Before, the CLI redrive passed no rules: a key only a project
 * rule finds (here `body.ref`) was "missing".
 */

const native = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
const keys: string[] = [];
let root = '';

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'qs-redrive-keyrules-'));
});

afterAll(async () => {
  if (keys.length > 0) await native.del(...keys);
  native.disconnect();
  rmSync(root, { recursive: true, force: true });
});

/** A DLQ and its work list with one name prefix (the project rule matches `<prefix>*`). */
function names(label: string): { prefix: string; dlq: string; work: string } {
  const prefix = uniqueName(label);
  const dlq = `${prefix}-dlq`;
  const work = `${prefix}-work`;
  keys.push(dlq, work);
  return { prefix, dlq, work };
}

/** A folder holding a project file whose rule for `<prefix>*` takes the key from `body.ref`. */
function projectDir(label: string, prefix: string): { dir: string; file: string } {
  const dir = join(root, label);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'queuescope.config.json');
  writeFileSync(file, JSON.stringify({ inspect: { queues: [{ match: `${prefix}*`, note: 'refs are the keys', keyRules: [{ kind: 'jsonPath', path: 'body.ref' }] }] } }));
  return { dir, file };
}

/** A folder with no project file (none above it either: the temp dir). */
function bareDir(label: string): string {
  const dir = join(root, label);
  mkdirSync(dir, { recursive: true });
  return dir;
}

const charge = (ref: string, n = 0): string => JSON.stringify({ ref, op: 'charge', n });

describe('CLI redrive: key rules from the project file / --profile, as inspect finds them', () => {
  it('--config FILE (as inspect takes it): a project file elsewhere gives the rules; a missing one is a usage error (exit 2)', async () => {
    const { prefix, dlq, work } = names('rk-explicit');
    await native.rpush(dlq, charge('X-1'), charge('X-2'));
    await native.rpush(work, charge('X-1'));
    const { file } = projectDir('explicit', prefix);
    const here = bareDir('explicit-cwd');
    const r = await runCli(here, ['redrive', REDIS_URL, `list:${dlq}`, '--to', `list:${work}`, '--dry-run', '--config', file]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`Rules: "${prefix}*" in ${file}`);
    expect(r.stdout).toContain(`warning: 1 of the 2 messages this run would move to ${work} carries an idempotency key already waiting in ${work} (e.g. X-1: DLQ`);
    const missing = await runCli(here, ['redrive', REDIS_URL, `list:${dlq}`, '--to', `list:${work}`, '--dry-run', '--config', join(here, 'nope.json')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('nope.json');
    // Nothing moved by either.
    expect(await native.llen(dlq)).toBe(2);
  });

  it('dry run: a key only the project rule finds (body.ref) already waiting in the target is warned, and the plan names the rule', async () => {
    const { prefix, dlq, work } = names('rk-cfg');
    await native.rpush(dlq, charge('X-1'), charge('X-2'));
    await native.rpush(work, charge('X-1'));
    const { dir, file } = projectDir('cfg', prefix);

    const r = await runCli(dir, ['redrive', REDIS_URL, `list:${dlq}`, '--to', `list:${work}`, '--dry-run']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`Rules: "${prefix}*" in ${file} (refs are the keys)`);
    expect(r.stdout).toContain(`warning: 1 of the 2 messages this run would move to ${work} carries an idempotency key already waiting in ${work} (e.g. X-1: DLQ`);
    expect(r.stdout).not.toContain('carries an idempotency key and could not');

    const json = await runCli(dir, ['redrive', REDIS_URL, `list:${dlq}`, '--to', `list:${work}`, '--dry-run', '--json']);
    const plan = JSON.parse(json.stdout) as RedrivePlan & { keyRulesSource?: string; keyRulesNote?: string };
    expect(plan.keyRulesSource).toBe(`"${prefix}*" in ${file}`);
    expect(plan.keyRulesNote).toBe('refs are the keys');
    expect(plan.keysInTarget).toEqual([expect.objectContaining({ queueId: `list:${work}`, checked: true, read: 1, withoutKey: 0, duplicates: 1, examples: [expect.objectContaining({ key: 'X-1' })] })]);

    // Without the project file: the built-in rules find no key (what the CLI did before with the file too).
    const bare = await runCli(bareDir('cfg-bare'), ['redrive', REDIS_URL, `list:${dlq}`, '--to', `list:${work}`, '--dry-run']);
    expect(bare.code).toBe(0);
    expect(bare.stdout).toContain('Rules: built-in rules');
    expect(bare.stdout).not.toContain('idempotency key already waiting');
    expect(bare.stdout).toContain('none of the 2 messages this run would move there carries an idempotency key');
    // Nothing moved.
    expect(await native.llen(dlq)).toBe(2);
    expect(await native.llen(work)).toBe(1);
  });

  it('--dedupe-by-key dedupes on the project rule key: one message per body.ref moves, the other copy stays', async () => {
    const { prefix, dlq, work } = names('rk-dedupe');
    // Two copies of X-1 (different bodies: nothing but body.ref makes them the same) and one X-2.
    await native.rpush(dlq, charge('X-1', 1), charge('X-1', 2), charge('X-2', 3));
    const { dir } = projectDir('dedupe', prefix);

    const dry = await runCli(dir, ['redrive', REDIS_URL, `list:${dlq}`, '--to', `list:${work}`, '--dedupe-by-key', '--dry-run', '--json']);
    expect(dry.code).toBe(0);
    const plan = JSON.parse(dry.stdout) as RedrivePlan;
    expect(plan.toMove).toBe(2);
    expect(plan.toSkip).toBe(1);
    expect(plan.skipped.map((s) => s.reason).join(' ')).toContain('duplicate idempotency key');

    const run = await runCli(dir, ['redrive', REDIS_URL, `list:${dlq}`, '--to', `list:${work}`, '--dedupe-by-key', '--yes']);
    expect(run.code).toBe(0);
    expect(run.stderr).toContain(`Rules: "${prefix}*" in`);
    expect(run.stdout).toContain('2 moved, 1 stayed');
    expect((await native.lrange(work, 0, -1)).map((b) => (JSON.parse(b) as { n: number }).n)).toEqual([1, 3]);
    expect((await native.lrange(dlq, 0, -1)).map((b) => (JSON.parse(b) as { n: number }).n)).toEqual([2]);
  });

  it('--filter key:missing selects by the project rule: no message has a missing key', async () => {
    const { prefix, dlq, work } = names('rk-filter');
    await native.rpush(dlq, charge('X-1'), JSON.stringify({ op: 'charge', note: 'no ref' }));
    const { dir } = projectDir('filter', prefix);
    const r = await runCli(dir, ['redrive', REDIS_URL, `list:${dlq}`, '--to', `list:${work}`, '--filter', 'key:missing', '--dry-run', '--json']);
    expect(r.code).toBe(0);
    // Only the message without body.ref (the built-in rules find a key in neither).
    expect((JSON.parse(r.stdout) as RedrivePlan).toMove).toBe(1);
  });

  it('--profile: the rules saved with the connection apply when no project file matches; a matching project file comes first', async () => {
    const { prefix, dlq, work } = names('rk-prof');
    await native.rpush(dlq, charge('X-1'), charge('X-2'));
    await native.rpush(work, charge('X-2'));
    const dir = bareDir('prof');
    const store = await ProfileStore.open({ configDir: join(dir, 'home') });
    const saved = await store.save({ name: 'RK Redis', config: { kind: 'redis', url: REDIS_URL } });
    await store.saveInspectSettings(saved.id, inspectConfigSchema.parse({ queues: [{ match: `${prefix}*`, keyRules: [{ kind: 'jsonPath', path: 'body.ref' }] }] }));

    const r = await runCli(dir, ['redrive', '--profile', 'RK Redis', `list:${dlq}`, '--to', `list:${work}`, '--dry-run']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`Rules: "${prefix}*" in connection "RK Redis"`);
    expect(r.stdout).toContain(`warning: 1 of the 2 messages this run would move to ${work} carries an idempotency key already waiting in ${work} (e.g. X-2: DLQ`);

    // A project file with an entry for the DLQ wins (here: a rule that finds no key).
    writeFileSync(join(dir, 'queuescope.config.json'), JSON.stringify({ inspect: { queues: [{ match: `${prefix}*`, keyRules: [{ kind: 'jsonPath', path: 'body.nothing' }] }] } }));
    const p = await runCli(dir, ['redrive', '--profile', 'RK Redis', `list:${dlq}`, '--to', `list:${work}`, '--dry-run']);
    expect(p.code).toBe(0);
    expect(p.stdout).toContain(`Rules: "${prefix}*" in ${join(dir, 'queuescope.config.json')}`);
    expect(p.stdout).not.toContain('idempotency key already waiting');
  });

  it('an invalid project file is refused as inspect refuses it (exit 2, naming the file), before anything is read', async () => {
    const { dlq, work } = names('rk-bad');
    await native.rpush(dlq, charge('X-1'));
    const dir = bareDir('bad');
    writeFileSync(join(dir, 'queuescope.config.json'), '{"inspect": {"queues": [{"match": 5}]}}');
    const r = await runCli(dir, ['redrive', REDIS_URL, `list:${dlq}`, '--to', `list:${work}`, '--dry-run']);
    const i = await runCli(dir, ['inspect', REDIS_URL, `list:${dlq}`]);
    expect(r.code).toBe(2);
    expect(r.code).toBe(i.code);
    expect(r.stderr).toBe(i.stderr);
    expect(r.stderr).toContain(join(dir, 'queuescope.config.json'));
  });
});

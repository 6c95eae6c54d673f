import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDIS_URL, uniqueName } from './env';
import { runCli, type CliRun } from './fixtures/run-cli';

/**
 * `queuescope export` whose file is not everything asked for, for a reason other than a cut body
 * or a line too long: here `--ids` naming a message that is not in the queue. The export said
 * "warning: the export is partial: …" and exited 0, so a script (a backup before a purge, CI)
 * took the file for complete. It now exits 7, as the other partial exports do.
 */
let dir: string;
const run = (argv: string[]): Promise<CliRun> => runCli(dir, argv);
const native = new Redis(REDIS_URL);
const key = uniqueName('export-partial');

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qs-export-partial-'));
  await native.rpush(key, JSON.stringify({ orderId: 'E-1' }), JSON.stringify({ orderId: 'E-2' }));
});

afterAll(async () => {
  await native.del(key);
  native.disconnect();
  await rm(dir, { recursive: true, force: true });
});

describe('export: partial for any reason exits 7', () => {
  it('--ids with one id not in the queue: the found one is written, the warning names the missing one, exit 7 (text and --json)', async () => {
    const peek = JSON.parse((await run(['peek', REDIS_URL, key, '--json'])).stdout) as { messages: { id: string }[] };
    const real = peek.messages[0]?.id ?? '';
    expect(real).not.toBe('');
    const out = join(dir, 'ids.jsonl');
    const r = await run(['export', REDIS_URL, key, '--out', out, '--ids', `${real},#7~00000000`]);
    expect(r.code, r.stderr).toBe(7);
    // The missing id is named (it was only counted).
    expect(r.stderr).toContain('warning: the export is partial: 1 of the 2 chosen messages was not found (consumed, moved, or beyond the queue): #7~00000000.');
    const lines = (await readFile(out, 'utf8')).split('\n').filter((l) => l !== '');
    expect(lines.length).toBe(2); // header + the one found
    const j = await run(['export', REDIS_URL, key, '--out', join(dir, 'ids-json.jsonl'), '--ids', `${real},#7~00000000`, '--json']);
    expect(j.code, j.stderr).toBe(7);
    expect(JSON.parse(j.stdout)).toMatchObject({ partial: true, messages: 1, notFound: 1, notFoundIds: ['#7~00000000'] });
    // One id chosen, not found: said of that one message (it read "1 of the 1 chosen message").
    const one = await run(['export', REDIS_URL, key, '--out', join(dir, 'one.jsonl'), '--ids', '#9~00000000']);
    expect(one.code).toBe(7);
    expect(one.stderr).toContain('warning: the export is partial: The chosen message #9~00000000 was not found (consumed, moved, or beyond the queue).');
    // All found: complete, exit 0.
    const whole = await run(['export', REDIS_URL, key, '--out', join(dir, 'ids-ok.jsonl'), '--ids', real]);
    expect(whole.code, whole.stderr).toBe(0);
    expect(whole.stderr).not.toMatch(/partial/);
  });
});

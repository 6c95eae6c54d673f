import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisAdapter, type RedisAdapter } from '../../core/adapters/redis';
import { REDRIVE_COUNT_HEADER } from '../../core/adapters/redrive-types';
import type { PeekPage } from '../../shared/domain';
import { runCli, type CliRun } from './fixtures/run-cli';
import { REDIS_URL, uniqueName } from './env';

/**
 * Stream entries whose field names are bytes that are not valid UTF-8 (a client writing raw
 * Buffers), or repeated. Before the fix the names were decoded as UTF-8 (invalid bytes → U+FFFD):
 * \xff a and \xfe a became the same header and one value was dropped, and the redrive backup held
 * the lossy names, so `reinject` wrote other field names than the entry had. Now each field gets
 * a distinct header key, `properties.streamFields` keeps the exact names, and a redrive (Lua,
 * server-side copy) and a re-inject of its backup give byte-identical entries.
 */

const native = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
const keys: string[] = [];
let a: RedisAdapter;
let dir: string;

const B = (...bytes: number[]): Buffer => Buffer.from(bytes);
const BIN_BODY = Buffer.concat([B(0x00, 0xff, 0x80, 0xc3), Buffer.from('{"order":"A-1"}')]);
/** Field list of the first entry: two binary names that read the same as lossy UTF-8, a text name equal to one's escaped form, a repeated name, a binary body and a binary value. */
const ENTRY1: Buffer[] = [
  Buffer.from('type'), Buffer.from('order.failed'),
  B(0xff, 0x61), Buffer.from('v1'),
  B(0xfe, 0x61), Buffer.from('v2'),
  Buffer.from('body'), BIN_BODY,
  B(0xc3), B(0x80, 0x81),
  Buffer.from('\\xffa'), Buffer.from('literal'),
  Buffer.from('type'), Buffer.from('dup'),
];
/** Second entry: no body field (the body is the field map as JSON), a binary name, a field a JSON reader drops (__proto__), an array-index name. */
const ENTRY2: Buffer[] = [B(0xff), Buffer.from('x'), Buffer.from('k'), B(0xfe, 0xfd), Buffer.from('__proto__'), Buffer.from('p'), Buffer.from('7'), Buffer.from('seven')];

function key(label: string): string {
  const k = uniqueName(`stream-bytes-${label}`);
  keys.push(k);
  return k;
}
function cli(argv: string[]): Promise<CliRun> {
  return runCli(dir, argv);
}
async function entries(k: string): Promise<Buffer[][]> {
  const r = (await native.xrangeBuffer(k, '-', '+')) as [Buffer, Buffer[]][];
  return r.map((e) => e[1]);
}
const withCounter = (fields: Buffer[], n: number): Buffer[] => [...fields, Buffer.from(REDRIVE_COUNT_HEADER), Buffer.from(String(n))];
const hex = (fields: Buffer[]): string[] => fields.map((b) => b.toString('hex'));

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qs-stream-bytes-'));
  a = createRedisAdapter({ kind: 'redis', url: REDIS_URL });
});

afterAll(async () => {
  await a.close();
  if (keys.length > 0) await native.del(...keys);
  native.disconnect();
  await rm(dir, { recursive: true, force: true });
});

describe('stream entries with binary and repeated field names', () => {
  it('peek keeps every field under a distinct key and the exact names in properties.streamFields', async () => {
    const k = key('peek');
    await native.xadd(k, '*', ...ENTRY1);
    await native.xadd(k, '*', ...ENTRY2);
    const page = await a.peek(`stream:${k}`, { limit: 10 });
    const [m1, m2] = page.messages;
    expect(Buffer.from(m1!.body.data, 'base64').equals(BIN_BODY)).toBe(true);
    expect(m1!.body.encoding).toBe('base64');
    expect(m1!.headers).toEqual({
      type: 'order.failed',
      '\\xffa #2': 'v1',
      '\\xfea': 'v2',
      '\\xc3': { base64: B(0x80, 0x81).toString('base64') },
      '\\xffa': 'literal',
      'type #2': 'dup',
    });
    expect(m1!.properties).toEqual({
      bodyField: 'body',
      streamFields: [
        { name: 'type', key: 'type' },
        { name: { base64: '/2E=' }, key: '\\xffa #2' },
        { name: { base64: '/mE=' }, key: '\\xfea' },
        { name: 'body', key: null },
        { name: { base64: 'ww==' }, key: '\\xc3' },
        { name: '\\xffa', key: '\\xffa' },
        { name: 'type', key: 'type #2' },
      ],
    });
    expect(JSON.parse(m2!.body.data)).toEqual({ '\\xff': 'x', k: { base64: B(0xfe, 0xfd).toString('base64') }, '__proto__ #2': 'p', '7': 'seven' });
    expect(m2!.properties.bodyField).toBeNull();
    expect(m2!.properties.streamFields).toEqual([
      { name: { base64: '/w==' }, key: '\\xff' },
      { name: 'k', key: 'k' },
      { name: '__proto__', key: '__proto__ #2' },
      { name: '7', key: '7' },
    ]);

    // The CLI's JSON shows the same distinct keys (as text).
    const r = await cli(['peek', REDIS_URL, `stream:${k}`, '--json']);
    expect(r.code, r.stderr).toBe(0);
    const viaCli = JSON.parse(r.stdout) as PeekPage;
    expect(Object.keys(viaCli.messages[0]!.headers)).toEqual(['type', '\\xffa #2', '\\xfea', '\\xc3', '\\xffa', 'type #2']);
    expect(viaCli.messages[0]!.properties.streamFields).toEqual(m1!.properties.streamFields);
  });

  it('redrive (server-side copy) and re-inject of its backup give byte-identical entries', async () => {
    const dlq = key('dlq');
    const target = key('target');
    const restored = key('restored');
    await native.xadd(dlq, '*', ...ENTRY1);
    await native.xadd(dlq, '*', ...ENTRY2);
    const backup = join(dir, 'backup.jsonl');

    const r = await cli(['redrive', REDIS_URL, `stream:${dlq}`, '--to', `stream:${target}`, '--backup', backup, '--yes']);
    expect(r.code, r.stderr).toBe(0);
    expect(await native.xlen(dlq)).toBe(0);
    const moved = await entries(target);
    // The move script copies the fields server-side: the same bytes, plus the redrive counter.
    expect(moved.map(hex)).toEqual([hex(withCounter(ENTRY1, 1)), hex(withCounter(ENTRY2, 1))]);

    // The backup holds the exact names (no U+FFFD anywhere).
    const text = await readFile(backup, 'utf8');
    expect(text).not.toContain('\ufffd');
    expect(text).toContain('"streamFields"');

    const ri = await cli(['reinject', REDIS_URL, `stream:${restored}`, '--from', backup, '--yes']);
    expect(ri.code, ri.stderr).toBe(0);
    expect(ri.stdout).toMatch(/Re-injected 2 of 2 messages/);
    const back = await entries(restored);
    expect(back.map(hex)).toEqual(moved.map(hex));

    // Re-injecting entries that carry the counter updates it where it is, as the move script does.
    const again = await a.peek(`stream:${restored}`, { limit: 10 });
    const twice = key('twice');
    expect((await a.redrive!.publish(`stream:${twice}`, again.messages)).failed).toEqual([]);
    expect((await entries(twice)).map(hex)).toEqual([hex(withCounter(ENTRY1, 2)), hex(withCounter(ENTRY2, 2))]);
  });

  it('an entry with plain names in an order of its own (body field not first, an index name, the counter mid-way) is re-injected in that order', async () => {
    const dlq = key('order-dlq');
    const target = key('order-target');
    const restored = key('order-restored');
    const fields = (counter: number): Buffer[] =>
      ['type', 'order.failed', 'body', '{"orderId":"A-1"}', '7', 'seven', REDRIVE_COUNT_HEADER, String(counter), 'error', 'HTTP 503'].map((x) => Buffer.from(x));
    await native.xadd(dlq, '*', ...fields(1));
    const backup = join(dir, 'order-backup.jsonl');
    const r = await cli(['redrive', REDIS_URL, `stream:${dlq}`, '--to', `stream:${target}`, '--backup', backup, '--yes']);
    expect(r.code, r.stderr).toBe(0);
    // The move script copies the fields in place, the counter +1 where it is.
    expect((await entries(target)).map(hex)).toEqual([hex(fields(2))]);
    const ri = await cli(['reinject', REDIS_URL, `stream:${restored}`, '--from', backup, '--yes']);
    expect(ri.code, ri.stderr).toBe(0);
    // The re-inject of the backup gives the same entry (it used to write body first, then type, 7, error, counter).
    expect((await entries(restored)).map((e) => e.map(String))).toEqual([fields(2).map(String)]);
  });

  it('a backup written before the field-order record (no header "written", no streamFields for plain names) is re-injected with a warning naming the file and what it did not record; the counter keeps its place', async () => {
    const dlq = key('old-dlq');
    const target = key('old-target');
    const restored = key('old-restored');
    const restoredNew = key('old-restored-new');
    const s = (...xs: string[]): Buffer[] => xs.map((x) => Buffer.from(x));
    // The body field third, the counter between type and error.
    const late = (counter: number): Buffer[] => s('type', 'order.failed', 'body', '{"orderId":"A-1"}', REDRIVE_COUNT_HEADER, String(counter), 'error', 'HTTP 503');
    await native.xadd(dlq, '*', ...late(1));
    await native.xadd(dlq, '*', ...s('body', '{"orderId":"A-2"}'));
    await native.xadd(dlq, '*', ...s('body', '{"orderId":"A-3"}', 'error', 'timeout'));
    const backup = join(dir, 'old-backup.jsonl');
    const r = await cli(['redrive', REDIS_URL, `stream:${dlq}`, '--to', `stream:${target}`, '--backup', backup, '--yes']);
    expect(r.code, r.stderr).toBe(0);
    // The same backup as a Queuescope before the field-order record wrote it: its header had no
    // "written" record, and entries with plain names carried no properties.streamFields.
    const lines = (await readFile(backup, 'utf8')).split('\n').filter((l) => l !== '');
    const old = lines.map((l) => {
      const o = JSON.parse(l) as { type: string; written?: unknown; properties?: Record<string, unknown> };
      if (o.type === 'queue') delete o.written;
      else if (o.properties !== undefined) delete o.properties.streamFields;
      return JSON.stringify(o);
    });
    const oldBackup = join(dir, 'old-format-backup.jsonl');
    await writeFile(oldBackup, `${old.join('\n')}\n`);
    expect(old[0]).not.toContain('"written"');
    expect(lines[1]).toContain('streamFields');

    const ri = await cli(['reinject', REDIS_URL, `stream:${restored}`, '--from', oldBackup, '--yes']);
    expect(ri.code, ri.stderr).toBe(0);
    // The body field's place is not in the file: it is written first, and the warning says so for
    // the 2 entries with other fields (the lone body field loses nothing).
    expect(ri.stderr).toContain(`warning: ${oldBackup} was written by an older Queuescope`);
    expect(ri.stderr).toMatch(/the original order of 2 of its 3 entries \(e\.g\. \d+-\d+, \d+-\d+\) cannot be restored: they are written to the stream "[^"]+" all with the body field first/);
    // What the file does record is kept: type before the counter before error, the counter +1 in its place.
    expect((await entries(restored)).map((e) => e.map(String))).toEqual([
      ['body', '{"orderId":"A-1"}', 'type', 'order.failed', REDRIVE_COUNT_HEADER, '2', 'error', 'HTTP 503'],
      ['body', '{"orderId":"A-2"}', REDRIVE_COUNT_HEADER, '1'],
      ['body', '{"orderId":"A-3"}', 'error', 'timeout', REDRIVE_COUNT_HEADER, '1'],
    ]);

    // The current backup records the order: no such warning, the entry as it was.
    const rn = await cli(['reinject', REDIS_URL, `stream:${restoredNew}`, '--from', backup, '--yes']);
    expect(rn.code, rn.stderr).toBe(0);
    expect(rn.stderr).not.toContain('older Queuescope');
    expect((await entries(restoredNew))[0]!.map(String)).toEqual(late(2).map(String));
  });

  it('a backup line whose properties.streamFields names a missing key is reported failed, not published with other fields', async () => {
    const src = key('bad-src');
    await native.xadd(src, '*', ...ENTRY1);
    const [m] = (await a.peek(`stream:${src}`, { limit: 1 })).messages;
    const broken = { ...m!, headers: { type: 'order.failed' } };
    const t = key('bad-target');
    const res = await a.redrive!.publish(`stream:${t}`, [broken]);
    expect(res.published).toEqual([]);
    expect(res.failed[0]?.error.message).toMatch(/properties\.streamFields names the field "\\xffa #2", which it does not carry/);
    expect(await native.exists(t)).toBe(0);
  });
});

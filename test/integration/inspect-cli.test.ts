import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ConfirmChannel } from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main, type CliIo } from '../../core/cli/main';
import type { InspectReport } from '../../shared/api/inspect';
import { AMQP_URL, RABBITMQ_MANAGEMENT_URL, REDIS_URL, uniqueName } from './env';
import { closeNative, nativeChannel, nativeCount, nativeDeleteQueue } from './rabbitmq-native';

/**
 * `queuescope inspect` against a real RabbitMQ work queue with a dead-letter exchange and its DLQ:
 * keys, verdicts, the DLQ-vs-source duplicate, `--fail-on`, `--config` rules, snapshots and the
 * peek side-effect gate.
 */

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}
async function run(argv: string[], cwd?: string): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const io: CliIo = {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    env: { QUEUESCOPE_HOME: home },
    cwd: cwd ?? dir,
  };
  const code = await main(argv, io);
  return { code, stdout, stderr };
}
const report = (r: Run): InspectReport => JSON.parse(r.stdout) as InspectReport;

const work = uniqueName('insp-work');
const dlq = uniqueName('insp-dlq');
const dlx = uniqueName('insp-dlx');
const quorum = uniqueName('insp-quorum');
const big = uniqueName('insp-big');
/** 510 small messages (RabbitMQ peeks at most 500), the only flagged one last. */
const deep = uniqueName('h4-insp-deep');
const p = work.slice(-8).toUpperCase(); // order ids unique to this run
let dir: string;
let home: string;
let ch: ConfirmChannel;

function send(queue: string, body: unknown, options: { messageId?: string; headers?: Record<string, unknown> } = {}): void {
  ch.sendToQueue(queue, Buffer.from(JSON.stringify(body)), { contentType: 'application/json', persistent: false, ...options });
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qs-inspect-'));
  home = join(dir, 'home');
  ch = await nativeChannel();
  await ch.assertExchange(dlx, 'direct', { durable: false, autoDelete: false });
  await ch.assertQueue(dlq, { durable: false });
  await ch.bindQueue(dlq, dlx, dlq);
  await ch.assertQueue(work, { durable: false, arguments: { 'x-dead-letter-exchange': dlx, 'x-dead-letter-routing-key': dlq } });
  // 1. The first copy of P-1:charge fails and is dead-lettered by the broker.
  send(work, { type: 'order.charge', orderId: `${p}-1` }, { messageId: `${p}-1:charge` });
  await ch.waitForConfirms();
  const first = await ch.get(work, { noAck: false });
  if (first === false) throw new Error('the first message did not arrive');
  ch.reject(first, false);
  for (let i = 0; i < 100 && (await nativeCount(dlq)) < 1; i++) await new Promise((r) => setTimeout(r, 20));
  // 2. The sender re-sends it with the same key; plus a full mutable order and an ID-only message.
  send(work, { type: 'order.charge', orderId: `${p}-1` }, { messageId: `${p}-1:charge` });
  send(
    work,
    {
      type: 'order.updated',
      order: { id: `${p}-2`, status: 'paid', customer: { id: 'c-1', email: 'buyer@example.com', shippingAddress: { line1: '1 Harbour St', city: 'Lisbon' } }, items: [{ sku: 'SKU-1', qty: 2 }], updatedAt: '2026-11-29T10:00:00Z' },
    },
    { headers: { 'Idempotency-Key': `${p}-2:update` } },
  );
  send(work, { orderId: `${p}-3`, operation: 'ship' });
  await ch.waitForConfirms();
  await ch.assertQueue(quorum, { durable: true, arguments: { 'x-queue-type': 'quorum', 'x-delivery-limit': 3 } });
  send(quorum, { orderId: `${p}-9` }, { messageId: `${p}-9:charge` });
  await ch.waitForConfirms();
  // A 3 MiB document: 19% of RabbitMQ 4.x's 16 MiB default, 2% of 3.8–3.13's 128 MiB.
  await ch.assertQueue(big, { durable: false });
  send(big, { documentId: `${p}-D1`, content: 'x'.repeat(3 * 1024 * 1024) }, { messageId: `${p}-D1:store` });
  await ch.waitForConfirms();
  await ch.assertQueue(deep, { durable: false });
  for (let i = 0; i < 509; i++) send(deep, { orderId: `${p}-${String(100 + i)}`, operation: 'charge' }, { messageId: `${p}-${String(100 + i)}:charge` });
  send(deep, { type: 'order.updated', order: { id: `${p}-999`, status: 'paid', customer: { email: 'buyer@example.com' }, updatedAt: '2026-11-29T10:00:00Z' } }, { messageId: `${p}-999:update` });
  await ch.waitForConfirms();
}, 30_000);

afterAll(async () => {
  for (const q of [work, dlq, quorum, big, deep]) await nativeDeleteQueue(q);
  await ch.deleteExchange(dlx).catch(() => undefined);
  await ch.close().catch(() => undefined);
  await closeNative();
  await rm(dir, { recursive: true, force: true });
});

describe('queuescope inspect (RabbitMQ)', () => {
  it('reports each message key, source and verdicts, and the duplicate key shared with the DLQ', async () => {
    const r = await run(['inspect', AMQP_URL, work, '--json']);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/^note: reading qs-test-insp-work-\S+ changes it:\n.*redelivered=true/s); // said before reading
    const rep = report(r);
    expect(rep.analysed).toBe(3);
    const byKey = new Map(rep.messages.map((m) => [m.key, m]));
    expect(byKey.get(`${p}-1:charge`)).toMatchObject({ keySource: 'AMQP message_id', keyVerdict: 'business-derived', verdict: 'ok' });
    expect(byKey.get(`${p}-2:update`)).toMatchObject({ keySource: 'header Idempotency-Key', verdict: 'flag' });
    expect(byKey.get(`${p}-2:update`)?.topReason).toMatch(/order\.status/);
    expect(byKey.get(null)).toMatchObject({ keyVerdict: 'missing', verdict: 'ok' });
    expect(rep.summary.flagged).toBe(1);
    const cmp = rep.comparisons.find((c) => c.relation === 'dead-letter-target');
    expect(cmp?.label).toBe(dlq);
    expect(cmp?.result?.sharedKeyCount).toBe(1);
    expect(cmp?.result?.sharedKeys[0]?.key).toBe(`${p}-1:charge`);
  });

  it('prints the summary and a table of verdicts, and --fail-on flag exits 6', async () => {
    const plain = await run(['inspect', AMQP_URL, work]);
    expect(plain.code).toBe(0);
    expect(plain.stdout).toMatch(/Redelivery safety of qs-test-insp-work-/);
    expect(plain.stdout).toMatch(/Payloads: 1 flag, 0 review, 2 ok/);
    expect(plain.stdout).toContain(`${p}-1:charge`);
    expect(plain.stdout).toMatch(new RegExp(`Compared with dead-letter queue ${dlq}[^\\n]*1 shared key`));
    const failing = await run(['inspect', AMQP_URL, work, '--fail-on', 'flag']);
    expect(failing.code).toBe(6);
    expect(failing.stderr).toMatch(/fail-on flag: 1 message flagged; exit 6/);
    // The DLQ holds only the ID-only copy: nothing to flag there.
    const dlqRun = await run(['inspect', AMQP_URL, dlq, '--fail-on', 'flag', '--json']);
    expect(dlqRun.code).toBe(0);
    expect(report(dlqRun).comparisons.find((c) => c.relation === 'dead-letter-source')?.result?.sharedKeyCount).toBe(1);
  });

  it('applies key rules from --config and refuses a bad --fail-on', async () => {
    const cfg = join(dir, 'rules.json');
    await writeFile(cfg, JSON.stringify({ inspect: { queues: [{ match: 'qs-test-insp-work-*', keyRules: [{ kind: 'template', template: '{body.orderId}:{body.operation}' }] }] } }));
    const rep = report(await run(['inspect', AMQP_URL, work, '--config', cfg, '--json']));
    expect(rep.rulesSource).toMatch(/"qs-test-insp-work-\*" in .*rules\.json/);
    const composed = rep.messages.find((m) => m.key === `${p}-3:ship`);
    expect(composed).toMatchObject({ keyOrigin: 'user', keyVerdict: 'business-derived' });
    expect(composed?.keySource).toMatch(/template/);
    const bad = await run(['inspect', AMQP_URL, work, '--fail-on', 'maybe']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--fail-on must be "flag" or "review"/);
  });

  it('inspects an exported snapshot file the same way', async () => {
    const file = join(dir, 'work.jsonl');
    expect((await run(['export', AMQP_URL, work, '--out', file])).code).toBe(0);
    const r = await run(['inspect', file, '--fail-on', 'flag', '--json']);
    expect(r.code).toBe(6);
    const rep = report(r);
    expect(rep.queue.name).toBe(work);
    expect(rep.sideEffects).toEqual([]); // a file is read without touching the broker
    expect(rep.summary.verdicts).toEqual({ ok: 2, review: 0, flag: 1 });
  });

  it('measures payload size against the connected RabbitMQ version\'s default max_message_size', async () => {
    const overview = await fetch(`${RABBITMQ_MANAGEMENT_URL}/api/overview`, { headers: { authorization: `Basic ${Buffer.from('guest:guest').toString('base64')}` } });
    const version = ((await overview.json()) as { rabbitmq_version?: string }).rabbitmq_version;
    expect(version).toMatch(/^\d+\.\d+\.\d+/);
    const rep = report(await run(['inspect', AMQP_URL, big, '--json']));
    const m = rep.messages[0];
    expect(m?.bytes).toBeGreaterThan(3 * 1024 * 1024);
    expect(m?.verdict).toBe('review');
    const major = Number(version?.split('.')[0]);
    // 3.8–3.13 allow 128 MiB by default; 4.x 16 MiB. The shared broker here is 3.10.8.
    const limit = major < 4 ? '128 MiB' : '16 MiB';
    expect(m?.reasons.join(' | ')).toContain(`of ${limit}, RabbitMQ ${String(version)} default max_message_size (${limit})`);
    if (major < 4) expect(m?.reasons.join(' | ')).not.toContain('16 MiB');
  });

  it('refuses a queue whose peek could dead-letter messages unless side effects are accepted', async () => {
    const refused = await run(['inspect', AMQP_URL, quorum]);
    expect(refused.code).toBe(5);
    expect(refused.stderr).toMatch(/dead-letter/);
    const ok = await run(['inspect', AMQP_URL, quorum, '--accept-side-effects', '--json']);
    expect(ok.code).toBe(0);
    expect(report(ok).messages[0]?.key).toBe(`${p}-9:charge`);
  });

  it('--fail-on on a queue deeper than one peek: exit 9 (incomplete) when the part read holds nothing to fail on, 6 when it does', async () => {
    const r = await run(['inspect', AMQP_URL, deep, '--fail-on', 'flag']);
    expect(r.stdout).toMatch(/Partial: .*one peek reads at most 500 messages/);
    expect(r.stdout).toMatch(/Payloads: 0 flag/);
    expect(r.code).toBe(9);
    expect(r.stderr).toContain(`fail-on flag: nothing flagged in the 500 messages read, but ${deep} holds about 510: a rabbitmq-classic queue cannot be paged: one peek returns at most 500 messages, and the rest cannot be read without consuming them`);
    expect(r.stderr).toMatch(/Exit 9 \(incomplete\)\.\n$/);
    // The same with --json: the report on stdout, the reason on stderr.
    const j = await run(['inspect', AMQP_URL, deep, '--fail-on', 'flag', '--json']);
    expect(j.code).toBe(9);
    expect(report(j)).toMatchObject({ analysed: 500, total: 510, partial: true });
    expect(j.stderr).toMatch(/nothing flagged in the 500 messages read, but \S+ holds about 510/);
    // --limit above the peek window is said, not silently capped.
    const over = await run(['inspect', AMQP_URL, deep, '--fail-on', 'flag', '--limit', '1000']);
    expect(over.stderr).toMatch(new RegExp(`note: --limit 1000 is more than one peek of ${deep} can read: rabbitmq-classic queues cannot be paged, so at most 500 messages are analysed`));
    expect(over.code).toBe(9);
    // A smaller --limit: raise it.
    const low = await run(['inspect', AMQP_URL, deep, '--fail-on', 'flag', '--limit', '20']);
    expect(low.code).toBe(9);
    expect(low.stderr).toMatch(/nothing flagged in the 20 messages read, but \S+ holds about 510: --limit 20 stopped the read\. Raise --limit \(up to 500, one peek\) or drop it\. Exit 9/);
    expect(low.stderr).not.toMatch(/note: --limit/);
    // Findings in the part read still exit 6 (bodies cut at 10 bytes are "review").
    const found = await run(['inspect', AMQP_URL, deep, '--fail-on', 'review', '--max-body-bytes', '10']);
    expect(found.code).toBe(6);
    expect(found.stderr).toMatch(/fail-on review: 500 messages flagged or to review; exit 6/);
    // Without --fail-on, a partial read is reported but is no failure.
    expect((await run(['inspect', AMQP_URL, deep])).code).toBe(0);
    // Its export holds the same 500: the snapshot is read whole, but it is not the whole queue.
    const file = join(dir, 'deep.jsonl');
    // It says so and exits 7 (partial): it exited 0 before, so a script took it for the whole queue.
    const exported = await run(['export', AMQP_URL, deep, '--out', file]);
    expect(exported.code).toBe(7);
    expect(exported.stderr).toMatch(/warning: the export is partial: /);
    const snap = await run(['inspect', file, '--fail-on', 'flag']);
    expect(snap.stdout).toMatch(new RegExp(`Partial: The snapshot holds only part of ${deep}: ${deep} cannot be paged \\(rabbitmq-classic\\): one peek reads at most 500 messages`));
    expect(snap.code).toBe(9);
    expect(snap.stderr).toContain(`fail-on flag: nothing flagged in the 500 messages read, but the snapshot holds only part of ${deep}: ${deep} cannot be paged`);
    expect(snap.stderr).toMatch(/Check the queue itself, or a snapshot that holds all of it\. Exit 9 \(incomplete\)\./);
  });
});

describe('queuescope inspect (snapshot): rows, --why, --max-body-bytes, project file', () => {
  const demo = join(process.cwd(), 'resources', 'demo-snapshot.jsonl');

  it('--rows N lists N messages with --json too (plus the summary\'s examples); the default is 1000', async () => {
    const all = report(await run(['inspect', demo, 'orders.work', '--json']));
    expect(all.analysed).toBe(29);
    expect(all.messages).toHaveLength(29);
    const five = report(await run(['inspect', demo, 'orders.work', '--json', '--rows', '5']));
    expect(five.messages.slice(0, 5).map((m) => m.id)).toEqual(all.messages.slice(0, 5).map((m) => m.id));
    const examples = new Set(five.summary.reasons.flatMap((x) => x.exampleIds).concat(five.summary.duplicateGroups.flatMap((g) => g.exampleIds)));
    for (const m of five.messages.slice(5)) expect(examples.has(m.id), m.id).toBe(true);
    expect(five.messages.length).toBeLessThan(29);
    expect(five.messagesTruncated).toBe(true);
    const none = report(await run(['inspect', demo, 'orders.work', '--json', '--rows', '0']));
    for (const m of none.messages) expect(examples.has(m.id), m.id).toBe(true);
    const help = await run(['inspect', '--help']);
    expect(help.stdout).toMatch(/--rows <n>\s+per-message rows \(0-100000; default 50 in the table, 1000\s+with --json/);
    expect(help.stdout).toMatch(/--why/);
    expect(help.stdout).toMatch(/--max-body-bytes <n>/);
    expect(help.stdout).toMatch(/9 {4}incomplete/);
    // The cut check reads the header's `written` record, which redrive backups carry too (not exports only).
    expect(help.stdout).toMatch(/an export, and a\s+redrive writing its backup, record there how many messages they wrote/);
    expect(help.stdout).toMatch(/the backup of a redrive that was killed or is still running/);
  });

  it('--fail-on with --limit on a queue that can be paged: exit 9 and "drop --limit" when the first ones are clean', async () => {
    const r = await run(['inspect', demo, 'orders.work', '--fail-on', 'flag', '--limit', '3']);
    expect(r.code).toBe(9);
    expect(r.stderr).toMatch(/fail-on flag: nothing flagged in the 3 messages read, but orders\.work holds about 29: --limit 3 stopped the read\. Drop --limit \(or raise it\) to check every message\. Exit 9 \(incomplete\)\./);
    expect(r.stderr).not.toMatch(/note: --limit/); // a snapshot can be paged
    expect((await run(['inspect', demo, 'orders.work', '--fail-on', 'flag', '--limit', '5'])).code).toBe(6); // #4 is flagged
    expect((await run(['inspect', demo, 'orders.work', '--fail-on', 'flag'])).code).toBe(6);
  });

  it("--why prints each row's key verdict reason and payload reasons under it", async () => {
    const plain = await run(['inspect', demo, 'orders.work', '--rows', '3']);
    expect(plain.stdout).not.toMatch(/key: business-derived/);
    expect(plain.stdout).toMatch(/3 of 29 messages listed \(--rows N for more, --why for each message's reasons, --json for all fields\)/);
    const why = await run(['inspect', demo, 'orders.work', '--rows', '3', '--why']);
    expect(why.code).toBe(0);
    const text = why.stdout.replace(/[│ ]+\n/g, '\n').replace(/\n[│ ]+ {7}/g, ' ');
    expect(text).toContain("key: business-derived: the key 'A-1101:charge' (from AMQP message_id) is built from body.orderId (A-1101) and the literal 'charge'");
    expect(text).toMatch(/key: missing: no idempotency key was found/);
    expect(text).toMatch(/why: only identifiers and fixed values/);
  });

  it('--max-body-bytes: validated, and a body above the default limit is read whole', async () => {
    const bad = await run(['inspect', demo, 'orders.work', '--max-body-bytes', '0']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--max-body-bytes must be a whole number of bytes from 1 to 268435456 \(256 MiB\), got "0"/);
    expect((await run(['inspect', demo, 'orders.work', '--max-body-bytes', '300000000'])).code).toBe(2);
    // A body of 3 MB, read whole from the broker only with the limit raised.
    const cut = report(await run(['inspect', AMQP_URL, big, '--json']));
    expect(cut.messages[0]?.reasons.join(' | ')).toMatch(/cut at the read limit/);
    const whole = report(await run(['inspect', AMQP_URL, big, '--json', '--max-body-bytes', String(4 * 1024 * 1024)]));
    expect(whole.messages[0]?.reasons.join(' | ')).not.toMatch(/cut at the read limit/);
    expect(whole.messages[0]?.payloadLabel).toBe('ok');
  });

  it("says which project file it uses when a JSON and a YAML one sit side by side, and that the DLQ is not in the snapshot", async () => {
    const both = join(dir, 'both');
    await mkdir(both, { recursive: true });
    await writeFile(join(both, 'queuescope.config.json'), JSON.stringify({ inspect: { queues: [{ match: 'invoices.*', keyRules: [], note: 'from json' }] } }));
    await writeFile(join(both, 'queuescope.config.yaml'), 'inspect:\n  queues:\n    - match: "invoices.*"\n      note: from yaml\n');
    const r = await run(['inspect', demo, 'invoices.work'], both);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(`note: using ${join(both, 'queuescope.config.json')}; ${join(both, 'queuescope.config.yaml')} in the same folder is ignored`);
    expect(r.stdout).toMatch(/Rules: "invoices\.\*" in .*queuescope\.config\.json \(from json\)/);
    expect(r.stdout).toMatch(/Compared with dead-letter queue invoices\.dlq: not compared\. invoices\.dlq \(the dead-letter queue of invoices\.work\) is not in this snapshot/);
    // --config names the file: nothing was chosen silently.
    const explicit = await run(['inspect', demo, 'invoices.work', '--config', 'queuescope.config.yaml'], both);
    expect(explicit.stderr).not.toMatch(/note: using/);
    expect(explicit.stdout).toMatch(/\(from yaml\)/);
    // audit and tune read the same project file and say the same.
    const note = `note: using ${join(both, 'queuescope.config.json')}; ${join(both, 'queuescope.config.yaml')} in the same folder is ignored`;
    const audit = await run(['audit', `${REDIS_URL}/15`, '--queues', `no-such-queue-${String(process.pid)}`], both);
    expect(audit.code).toBe(4);
    expect(audit.stderr).toContain(note);
    const tune = await run(['tune', demo, 'orders.work'], both);
    expect(tune.stderr).toContain(note);
    expect((await run(['tune', demo, 'orders.work', '--config', 'queuescope.config.yaml'], both)).stderr).not.toMatch(/note: using/);
  });
});

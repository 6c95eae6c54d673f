import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Ajv from 'ajv-draft-04';
import { XMLParser } from 'fast-xml-parser';
import { SyntaxValidator } from 'fast-xml-validator';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main, type CliIo } from '../../core/cli/main';
import type { AuditReport } from '../../shared/audit';
import { seedRedis } from '../../scripts/seed/redis';
import { seedRabbitmq } from '../../scripts/seed/rabbitmq';
import { seedSqs } from '../../scripts/seed/sqs';
import { seedMisconfig } from '../../scripts/seed/misconfig';
import { junitSchemaErrors } from '../fixtures/audit/junit-schema';
import { AMQP_URL, RABBITMQ_MANAGEMENT_URL, REDIS_URL, SQS_ENDPOINT, SQS_REGION } from './env';

// `npm run seed` (the demo data plus scripts/seed/misconfig.ts) and then `queuescope audit` on the
// three seeded brokers: it finds exactly the deliberate misconfigurations, writes JUnit and SARIF
// that validate, and exits 6 under --fail-on error. The audit is limited to the seed's queue names
// (audit.queues in a project file), since other tests' queues live on the same brokers.
const SEEDED = [
  // Redis
  'payments', 'orders-stream', 'emails:outbox', 'mailer',
  // RabbitMQ
  'orders.work', 'orders.dlq', 'notifications', 'invoices.work', 'invoices.dlq', 'audit.work', 'shipments.work', 'shipments.dlq',
  // SQS
  'orders', 'orders-dlq', 'payments.fifo', 'payments-dlq.fifo', 'emails', 'invoices', 'invoices-dlq',
];
/** The deliberate misconfigurations of the seed, and the shared Redis running without persistence. */
const EXPECTED = [
  'error 127.0.0.1:6379 redis.no-persistence',
  'error audit.work rabbitmq.dead-letters-unroutable',
  'error emails sqs.no-redrive-policy',
  'error invoices sqs.no-redrive-policy',
  'error mailer redis.bullmq-remove-on-fail',
  'error notifications rabbitmq.ttl-or-max-length-without-dlx',
  'warning orders-dlq sqs.dlq-not-empty',
  'warning orders-stream redis.stream-stranded-pending-entries',
  'warning payments-dlq.fifo sqs.dlq-not-empty',
  'warning shipments.work rabbitmq.no-dead-letter-exchange',
  'info emails sqs.short-polling',
];

const SQS_URL = `sqs://${SQS_REGION}?endpoint=${SQS_ENDPOINT}`;
const CONNECTIONS = [REDIS_URL, AMQP_URL, SQS_URL];
let dir: string;

async function run(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const io: CliIo = {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    env: { QUEUESCOPE_HOME: dir, AWS_ACCESS_KEY_ID: 'test', AWS_SECRET_ACCESS_KEY: 'test', RABBITMQ_MANAGEMENT_URL },
    cwd: dir,
  };
  const code = await main(argv, io);
  return { code, stdout, stderr };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qs-audit-seed-'));
  process.env.AWS_ACCESS_KEY_ID ??= 'test';
  process.env.AWS_SECRET_ACCESS_KEY ??= 'test';
  await seedRedis(REDIS_URL);
  await seedRabbitmq(AMQP_URL, RABBITMQ_MANAGEMENT_URL);
  await seedSqs(SQS_ENDPOINT, SQS_REGION);
  await seedMisconfig({ only: new Set(['redis', 'rabbitmq', 'sqs']), redisUrl: REDIS_URL, amqpUrl: AMQP_URL, sqsEndpoint: SQS_ENDPOINT, region: SQS_REGION });
  await writeFile(join(dir, 'queuescope.config.json'), JSON.stringify({ version: 1, audit: { queues: SEEDED } }));
}, 180_000);

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('queuescope audit on the seeded brokers', () => {
  it('finds exactly the deliberate misconfigurations (JSON)', async () => {
    const r = await run(['audit', ...CONNECTIONS, '--format', 'json', '--fail-on', 'none']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout) as AuditReport;
    expect(report.findings.map((f) => `${f.severity} ${f.target} ${f.ruleId}`).sort()).toEqual([...EXPECTED].sort());
    expect(report.queues.map((q) => q.name).sort()).toEqual(SEEDED.filter((n) => n !== 'emails:outbox').sort());
    // The one-click fixes the app offers on the seed.
    expect(report.findings.filter((f) => f.autoFix !== null).map((f) => `${f.target}:${f.autoFix?.kind ?? ''}`).sort()).toEqual(['invoices:sqs.set-redrive-policy', 'shipments.work:rabbitmq.add-dlx-policy']);
  });

  it('writes a JUnit file whose failures are the errors, and exits 6 under --fail-on error', async () => {
    const out = join(dir, 'audit.xml');
    const r = await run(['audit', ...CONNECTIONS, '--format', 'junit', '--output', out, '--fail-on', 'error']);
    expect(r.code).toBe(6);
    expect(r.stderr).toMatch(/^6 errors, 4 warnings, 1 info \(0 suppressed, \d+ not checked, \d+ passed\) in 18 queues; junit report written to /);
    const xml = await readFile(out, 'utf8');
    // Well-formed XML (fast-xml-validator), valid against Jenkins' published JUnit schema
    // (test/fixtures/audit/jenkins-junit-4.xsd, libxml2's xmllint via xmllint-wasm), then the values:
    // testsuites > testsuite[name,tests,failures,errors,skipped] > testcase[name,classname] > failure[message,type] | skipped.
    expect(SyntaxValidator.validate(xml)).toBe(true);
    expect(await junitSchemaErrors([xml])).toEqual([]);
    const doc = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '', isArray: (name) => name === 'testsuite' || name === 'testcase' }).parse(xml) as {
      testsuites: { tests: string; failures: string; testsuite: { name: string; tests: string; failures: string; skipped: string; errors: string; testcase: { name: string; classname: string; failure?: { message: string; type: string }; skipped?: unknown }[] }[] };
    };
    const suites = doc.testsuites.testsuite;
    let failures = 0;
    let tests = 0;
    const failed: string[] = [];
    for (const s of suites) {
      expect(s.name).toMatch(/^(sqs|rabbitmq|redis)\.[a-z0-9-]+$/);
      expect(Number(s.tests)).toBe(s.testcase.length);
      expect(Number(s.errors)).toBe(0);
      const f = s.testcase.filter((c) => c.failure !== undefined);
      expect(Number(s.failures)).toBe(f.length);
      expect(Number(s.skipped)).toBe(s.testcase.filter((c) => c.skipped !== undefined).length);
      for (const c of s.testcase) {
        expect(c.name).not.toBe('');
        // The rule id once (package = broker): `rabbitmq.dead-letters-unroutable`, not `rabbitmq.rabbitmq.…`.
        expect(c.classname).toBe(s.name);
        expect(c.classname).toMatch(/^(redis|rabbitmq|sqs)\.[a-z0-9-]+$/);
      }
      for (const c of f) {
        expect(c.failure?.type).toBe('error');
        expect(c.failure?.message).not.toBe('');
        failed.push(`${c.name} ${s.name}`);
      }
      failures += f.length;
      tests += s.testcase.length;
    }
    expect(Number(doc.testsuites.failures)).toBe(failures);
    expect(Number(doc.testsuites.tests)).toBe(tests);
    expect(failed.sort()).toEqual(EXPECTED.filter((e) => e.startsWith('error ')).map((e) => e.slice('error '.length)).sort());
  });

  it('writes SARIF 2.1.0 that validates against the published schema (ajv, draft-04)', async () => {
    const r = await run(['audit', ...CONNECTIONS, '--format', 'sarif', '--fail-on', 'warning']);
    expect(r.code).toBe(6);
    const sarif = JSON.parse(r.stdout) as { version: string; runs: { results: { ruleId: string; level: string; locations: { logicalLocations: { name: string }[] }[] }[] }[] };
    const schema = JSON.parse(readFileSync(fileURLToPath(new URL('../fixtures/audit/sarif-schema-2.1.0.json', import.meta.url)), 'utf8')) as object;
    // The schema's language-tag pattern is not valid in unicode mode (a stray `]`); it was written for ECMAScript 5 regexes.
    const ajv = new Ajv({ allErrors: true, strict: false, unicodeRegExp: false });
    const validate = ajv.compile(schema);
    const ok = validate(sarif);
    expect(validate.errors ?? []).toEqual([]);
    expect(ok).toBe(true);
    expect(sarif.version).toBe('2.1.0');
    const levels: Record<string, string> = { error: 'error', warning: 'warning', info: 'note' };
    expect(sarif.runs[0]?.results.map((x) => `${Object.keys(levels).find((k) => levels[k] === x.level) ?? '?'} ${x.locations[0]?.logicalLocations[0]?.name ?? ''} ${x.ruleId}`).sort()).toEqual([...EXPECTED].sort());
  });

  it('a suppression with a reason is reported as suppressed and no longer fails the run; text and markdown say so', async () => {
    const cfg = join(dir, 'suppress.yaml');
    await writeFile(
      cfg,
      `audit:\n  queues: [${SEEDED.map((s) => JSON.stringify(s)).join(', ')}]\n  severity:\n    redis.no-persistence: warning\n  suppress:\n    - rule: sqs.no-redrive-policy\n      queue: "*"\n      reason: email and invoice sends are retried by the producer\n    - rule: rabbitmq.ttl-or-max-length-without-dlx\n      queue: notifications\n      reason: notifications expire on purpose after an hour\n    - rule: rabbitmq.dead-letters-unroutable\n      queue: audit.work\n      reason: demo of a broken DLX\n    - rule: redis.bullmq-remove-on-fail\n      queue: mailer\n      reason: receipts are best-effort\n`,
    );
    const r = await run(['audit', ...CONNECTIONS, '--config', cfg]);
    expect(r.code).toBe(0);
    // notifications' TTL finding is suppressed, so its missing DLX (rejected messages are discarded too) is a warning of its own.
    expect(r.stdout).toContain('0 errors, 6 warnings, 1 info (5 suppressed');
    expect(r.stdout).toMatch(/WARNING {2}notifications {2}rabbitmq\.no-dead-letter-exchange/);
    expect(r.stdout).toMatch(/SUPPRESSED {2}notifications {2}rabbitmq\.ttl-or-max-length-without-dlx\n.*\n {4}suppressed: notifications expire on purpose after an hour/);
    const md = await run(['audit', ...CONNECTIONS, '--config', cfg, '--format', 'markdown']);
    expect(md.stdout).toContain('## Suppressed');
    expect(md.stdout).toContain('| notifications | rabbitmq.ttl-or-max-length-without-dlx | notifications expire on purpose after an hour |');
  });

  it('a --queues pattern or audit.queues that matches no queue fails with exit 4, naming the pattern and similar queues', async () => {
    const r = await run(['audit', AMQP_URL, '--queues', 'zzz*', '--format', 'junit']);
    expect(r.code).toBe(4);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('No queue matches --queues "zzz*"');
    expect(r.stderr).toContain('server-level checks alone are not a pass');
    const typo = await run(['audit', AMQP_URL, '--queues', 'shipments.wrk']);
    expect(typo.code).toBe(4);
    expect(typo.stderr).toMatch(/No queue matches --queues "shipments\.wrk" on .*; similar: shipments\.work/);
    const cfg = join(dir, 'typo-queues.json');
    await writeFile(cfg, JSON.stringify({ audit: { queues: ['notifcations'] } }));
    const c = await run(['audit', AMQP_URL, '--config', cfg, '--fail-on', 'none']);
    expect(c.code).toBe(4);
    expect(c.stderr).toMatch(/No queue matches audit\.queues "notifcations" \(.*typo-queues\.json\) on .*; similar: notifications/);
    // A pattern that matches still passes (exit 0 under --fail-on none).
    expect((await run(['audit', AMQP_URL, '--queues', 'shipments.*', '--fail-on', 'none'])).code).toBe(0);
  });

  it('a --queues pattern that matches only Redis lists says they have no configuration to audit (exit 4)', async () => {
    const key = `qs-audit-list-${String(process.pid)}-${String(Date.now())}`;
    const redis = new Redis(REDIS_URL);
    try {
      await redis.rpush(key, 'x');
      const r = await run(['audit', REDIS_URL, '--queues', key]);
      expect(r.code, r.stderr).toBe(4);
      expect(r.stderr).toContain(`--queues "${key}" matches only queues with no configuration to audit`);
      expect(r.stderr).toContain(`${key} (redis-list)`);
    } finally {
      await redis.del(key);
      await redis.quit();
    }
  });

  it('an unused suppression is a warning in every format, not a failure', async () => {
    const cfg = join(dir, 'unused.json');
    await writeFile(cfg, JSON.stringify({ audit: { queues: SEEDED, suppress: [{ rule: 'rabbitmq.ttl-or-max-length-without-dlx', queue: 'notifcations', reason: 'typo of notifications' }] } }));
    const warning = 'unused suppression audit.suppress[0] (rabbitmq.ttl-or-max-length-without-dlx on "notifcations"): queue pattern "notifcations" matches no audited queue; similar: notifications';
    const text = await run(['audit', AMQP_URL, '--config', cfg, '--fail-on', 'none']);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(`warning: ${warning}`);
    // The finding the typo meant to suppress is still an error.
    expect(text.stdout).toMatch(/ERROR {4}notifications {2}rabbitmq\.ttl-or-max-length-without-dlx/);
    const json = await run(['audit', AMQP_URL, '--config', cfg, '--format', 'json', '--fail-on', 'none']);
    expect((JSON.parse(json.stdout) as AuditReport).unusedSuppressions).toEqual([{ index: 0, rule: 'rabbitmq.ttl-or-max-length-without-dlx', queue: 'notifcations', why: 'queue pattern "notifcations" matches no audited queue; similar: notifications' }]);
    expect(json.stderr).toContain(`warning: ${warning}`);
    const junit = await run(['audit', AMQP_URL, '--config', cfg, '--format', 'junit', '--fail-on', 'none']);
    expect(junit.stdout).toContain(`<system-err>warning: ${warning.replace(/"/g, '&quot;')}</system-err>`);
    expect(await junitSchemaErrors([junit.stdout])).toEqual([]);
    const sarif = await run(['audit', AMQP_URL, '--config', cfg, '--format', 'sarif', '--fail-on', 'none']);
    expect(sarif.stdout).toContain(JSON.stringify(warning));
    const md = await run(['audit', AMQP_URL, '--config', cfg, '--format', 'markdown', '--fail-on', 'none']);
    expect(md.stdout).toContain('## Unused suppressions');
  });

  it('a bad project file is refused with every problem by path (exit 2)', async () => {
    const cfg = join(dir, 'bad.json');
    await writeFile(cfg, JSON.stringify({ audit: { severity: { 'sqs.no-such-rule': 'off' }, suppress: [{ rule: 'sqs.short-polling', queue: 'emails', reason: '' }] } }));
    const r = await run(['audit', REDIS_URL, '--config', cfg]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('audit.suppress[0].reason: a suppression needs a written reason');
    await writeFile(cfg, JSON.stringify({ audit: { severity: { 'sqs.no-such-rule': 'off' }, thresholds: { 'sqs.max-receive-count-too-high': { max: 'ten' } } } }));
    const r2 = await run(['audit', REDIS_URL, '--config', cfg]);
    expect(r2.code).toBe(2);
    expect(r2.stderr).toContain('audit.severity.sqs.no-such-rule: unknown audit rule "sqs.no-such-rule"');
    expect(r2.stderr).toContain('audit.thresholds.sqs.max-receive-count-too-high.max: must be a number');
  });

  it('a measurements file makes the processing-time rules run (tune --json shape)', async () => {
    const m = join(dir, 'measurements.json');
    await writeFile(m, JSON.stringify([{ queueId: 'x', queueName: 'orders', stats: { p99Ms: 25_000, meanMs: 4_000 }, measurement: { source: 'littles-law', meanMs: 4_000 }, units: 'ms' }]));
    const r = await run(['audit', SQS_URL, '--queues', 'orders', '--measurements', m, '--format', 'json', '--fail-on', 'none']);
    const report = JSON.parse(r.stdout) as AuditReport;
    expect(report.findings.map((f) => `${f.target} ${f.ruleId}`)).toEqual(['orders sqs.visibility-timeout-below-processing-time']);
    expect(report.findings[0]?.message).toContain('VisibilityTimeout is 30 s, below 3 × measured p99 25 s = 75 s');
  });
});

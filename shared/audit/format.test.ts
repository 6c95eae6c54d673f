import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { XMLParser } from 'fast-xml-parser';
import { SyntaxValidator } from 'fast-xml-validator';
import { defaultProjectConfig } from '../config/project-config';
import { evaluateAudit, similarNames } from './evaluate';
import { formatAuditReport, mdEscape, toSarif, xmlEscape, xmlText } from './format';
import type { AuditReport, SqsQueueFacts } from './types';
import { junitSchemaErrors } from '../../test/fixtures/audit/junit-schema';

function sqsFacts(name: string, over: Partial<SqsQueueFacts> = {}): SqsQueueFacts {
  return {
    kind: 'sqs',
    id: `sqs:http://x/0/${name}`,
    name,
    url: `http://x/0/${name}`,
    arn: `arn:aws:sqs:us-east-1:0:${name}`,
    fifo: false,
    contentBasedDeduplication: null,
    visibilityTimeoutS: 30,
    retentionS: 345_600,
    receiveWaitTimeS: 0,
    maximumMessageSize: 262_144,
    depth: 0,
    inFlight: 0,
    redrivePolicy: null,
    redrivePolicyError: null,
    redriveAllowPolicy: null,
    deadLetterQueue: null,
    deadLetterSources: [],
    isDeadLetterQueue: false,
    sample: null,
    sampleNote: 'message sampling is off',
    dlqCandidate: null,
    ...over,
  };
}

function report(names: string[], suppress: { rule: string; queue: string; reason: string }[] = []): AuditReport {
  return evaluateAudit([{ broker: 'sqs', label: 'sqs://test', servers: [], queues: names.map((n) => sqsFacts(n)), notes: [] }], {
    config: { ...defaultProjectConfig().audit, suppress },
    measurements: new Map(),
    now: Date.UTC(2026, 0, 2, 3, 4, 5),
  });
}

const parser = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '', isArray: (n) => n === 'testsuite' || n === 'testcase' });
/** Keeps text and attribute values exactly as written (no trimming, no number parsing, no entity decoding), for round-trip checks with {@link decodeXml}. */
const rawParser = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '', trimValues: false, parseTagValue: false, parseAttributeValue: false, processEntities: false, isArray: (n) => n === 'testsuite' || n === 'testcase' });
interface JUnitDoc {
  testsuites: { tests: string; failures: string; testsuite: { name: string; skipped: string; testcase: { name: string; failure?: unknown; skipped?: unknown }[] }[] };
}
/** Characters XML 1.0 does not allow: the formatter writes U+FFFD for them. */
const illegalXml = /[^\x09\x0A\x0D\x20-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu;
const NAMED: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };
/** Decodes XML's predefined entities and numeric character references in one pass (as a conforming parser does). */
const decodeXml = (s: string): string => s.replace(/&(lt|gt|amp|quot|apos|#\d+|#x[0-9a-fA-F]+);/g, (_m, e: string) => NAMED[e] ?? String.fromCodePoint(e.startsWith('#x') ? parseInt(e.slice(2), 16) : Number(e.slice(1))));

describe('JUnit', () => {
  it('errors are failures, info passes with output, suppressed and not-checked are skipped with the reason; counts add up; valid against the Jenkins JUnit schema', async () => {
    const r = report(['orders', 'emails'], [{ rule: 'sqs.no-redrive-policy', queue: 'emails', reason: 'producer retries' }]);
    const xml = formatAuditReport(r, 'junit', { failOn: 'error' });
    expect(SyntaxValidator.validate(xml)).toBe(true);
    const doc = parser.parse(xml) as JUnitDoc;
    const suite = (rule: string) => doc.testsuites.testsuite.find((s) => s.name === rule);
    expect(suite('sqs.no-redrive-policy')?.testcase.map((c) => `${c.name}:${c.failure !== undefined ? 'failure' : c.skipped !== undefined ? 'skipped' : 'ok'}`).sort()).toEqual(['emails:skipped', 'orders:failure']);
    // The schema types <skipped> as text (no message attribute): the reason is its content.
    expect(suite('sqs.no-redrive-policy')?.testcase.find((c) => c.name === 'emails')?.skipped).toBe('suppressed: producer retries');
    expect(suite('sqs.visibility-timeout-below-processing-time')?.testcase.map((c) => c.skipped)).toEqual(['not checked: no measurement', 'not checked: no measurement']);
    expect(suite('sqs.visibility-timeout-below-processing-time')?.skipped).toBe('2');
    expect(suite('sqs.short-polling')?.testcase.every((c) => c.failure === undefined)).toBe(true);
    expect(doc.testsuites.failures).toBe('1');
    // The classname is the rule id once (Jenkins: package = broker, class = rule), not "sqs.sqs.<rule>".
    const classnames = (parser.parse(xml) as { testsuites: { testsuite: { testcase: { classname: string }[] }[] } }).testsuites.testsuite.flatMap((x) => x.testcase.map((c) => c.classname));
    expect(classnames).toContain('sqs.no-redrive-policy');
    expect(classnames.filter((c) => /^(\w+)\.\1\./.test(c) || !/^sqs\.[a-z0-9-]+$/.test(c))).toEqual([]);
    // --fail-on warning does not turn info into failures
    const warningXml = formatAuditReport(r, 'junit', { failOn: 'warning' });
    expect((parser.parse(warningXml) as JUnitDoc).testsuites.failures).toBe('1');
    expect(await junitSchemaErrors([xml, warningXml, formatAuditReport(report([]), 'junit')])).toEqual([]);
  });

  it('the schema check catches what the formatter used to write (skipped@message, empty <properties/>, testsuites@skipped)', async () => {
    const xml = formatAuditReport(report(['orders']), 'junit');
    const broken = xml
      .replace('<testsuites ', '<testsuites skipped="1" ')
      .replace(/(<testsuite [^>]*>)/, '$1\n    <properties/>')
      .replace(/<skipped>([^<]*)<\/skipped>/, '<skipped message="$1"/>');
    const errors = await junitSchemaErrors([broken]);
    expect(errors.join('\n')).toMatch(/'testsuites', attribute 'skipped'/);
    expect(errors.join('\n')).toMatch(/'properties': Missing child element/);
    expect(errors.join('\n')).toMatch(/'skipped', attribute 'message'/);
  });

  it('hostile queue names and suppression reasons stay valid against the Jenkins JUnit schema and round-trip', async () => {
    // One xmllint run validates every generated report (an xmllint start per document would cost ~10 ms each).
    const hostile = fc.string({ minLength: 1, maxLength: 40, unit: 'binary' });
    const markup = fc.constantFrom('</testcase>', ']]>', '<![CDATA[', '&amp;', '"\'<>&', '\r\n', '\r', '\t', '\u0000', '\u001b[31m', '\uD800', '\uFFFE', '&#0;', '<skipped message="x"/>');
    const text = fc.oneof(hostile, fc.array(fc.oneof(hostile, markup), { minLength: 1, maxLength: 6 }).map((p) => p.join('')));
    const cases = fc.sample(fc.record({ name: text, reason: text, suppress: fc.boolean() }), { numRuns: 300, seed: 20260102 });
    // Each report also carries an unused suppression with a hostile pattern (its warning goes into <system-err>).
    const docs = cases.map((c) => formatAuditReport(report([c.name, 'other'], [...(c.suppress ? [{ rule: 'sqs.no-redrive-policy', queue: c.name, reason: c.reason }] : []), { rule: 'sqs.dlq-not-empty', queue: `${c.reason}\u0000]]>`, reason: 'x' }]), 'junit'));
    expect(docs.every((d) => d.includes('<testsuite name="queuescope.unused-suppressions"'))).toBe(true);
    const errors = await junitSchemaErrors(docs);
    const failing = [...new Set(errors.map((e) => Number(/^report-(\d+)\.xml/.exec(e)?.[1] ?? -1)))].map((i) => ({ input: cases[i], errors: errors.filter((e) => e.startsWith(`report-${String(i)}.xml`)) }));
    expect(failing).toEqual([]);
    cases.forEach((c, i) => {
      const doc = rawParser.parse(docs[i] ?? '') as JUnitDoc;
      const tc = doc.testsuites.testsuite.find((s) => s.name === 'sqs.no-redrive-policy')?.testcase.find((t) => decodeXml(t.name) === c.name.replace(illegalXml, '\uFFFD'));
      expect(tc, JSON.stringify(c)).toBeDefined();
      if (c.suppress && c.name !== 'other') {
        expect(tc?.failure).toBeUndefined();
        expect(decodeXml(String(tc?.skipped))).toBe(`suppressed: ${c.reason}`.replace(illegalXml, '\uFFFD'));
      } else expect(tc?.failure).toBeDefined();
    });
  });

  it('any queue name stays well-formed XML and round-trips (XML-illegal characters become U+FFFD)', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 40, unit: 'binary' }), (name) => {
        const xml = formatAuditReport(report([name]), 'junit');
        expect(SyntaxValidator.validate(xml)).toBe(true);
        const doc = parser.parse(xml) as JUnitDoc;
        const got = doc.testsuites.testsuite.find((s) => s.name === 'sqs.no-redrive-policy')?.testcase[0]?.name;
        const expected = name.replace(/[^\x09\x0A\x0D\x20-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu, '\uFFFD');
        // fast-xml-parser leaves numeric character references (&#9; &#10; &#13;) as they are; a CI server's parser decodes them.
        const decoded = String(got).replace(/&#(\d+);/g, (_m, n: string) => String.fromCharCode(Number(n)));
        expect(decoded).toBe(expected);
      }),
      { numRuns: 200 },
    );
    expect(xmlEscape('a<b>&"\'\u0001')).toBe('a&lt;b&gt;&amp;&quot;&apos;\uFFFD');
    expect(xmlText('a\r\nb')).toBe('a&#13;\nb');
  });
});

describe('Markdown and SARIF', () => {
  it('a queue name cannot break the table or inject HTML', () => {
    const md = formatAuditReport(report(['a|b<script>x</script>']), 'markdown');
    const row = md.split('\n').find((l) => l.startsWith('| error |'));
    expect(row).toBeDefined();
    expect(row?.split(/(?<!\\)\|/).length).toBe(6); // 4 cells between 5 pipes
    expect(md).not.toContain('<script>');
    expect(mdEscape('x|y\n<z>')).toBe('x\\|y \\<z\\>');
  });

  it('SARIF has one result per finding, rule indexes into the driver rules, suppressions for suppressed findings', () => {
    const r = report(['orders', 'emails'], [{ rule: 'sqs.no-redrive-policy', queue: 'emails', reason: 'producer retries' }]);
    const s = toSarif(r) as { runs: { tool: { driver: { rules: { id: string }[] } }; results: { ruleId: string; ruleIndex: number; level: string; suppressions?: { justification: string }[] }[] }[] };
    const run = s.runs[0];
    expect(run?.results.length).toBe(r.findings.length);
    for (const x of run?.results ?? []) expect(run?.tool.driver.rules[x.ruleIndex]?.id).toBe(x.ruleId);
    expect(run?.results.filter((x) => x.suppressions).map((x) => x.suppressions?.[0]?.justification)).toEqual(['producer retries']);
    expect(run?.results.find((x) => x.ruleId === 'sqs.short-polling')?.level).toBe('note');
  });

  it('text output passes every line through the escape function', () => {
    const text = formatAuditReport(report(['evil\u001b[31m']), 'text', { escape: (l) => l.replace(/\u001b/g, '\\x1b') });
    expect(text).not.toContain('\u001b');
    expect(text).toContain('evil\\x1b[31m');
  });
});

describe('unused suppressions (a warning in every format, never a failure)', () => {
  const suppress = [
    { rule: 'sqs.no-redrive-policy', queue: 'notifcations', reason: 'typo of notifications' },
    { rule: 'sqs.no-redrive-policy', queue: 'orders', reason: 'producer retries' },
    { rule: 'redis.no-persistence', queue: '127.0.0.1:6379', reason: 'another connection: not listed' },
    { rule: 'sqs.dlq-not-empty', queue: 'orders', reason: 'the rule finds nothing on orders' },
  ];
  const r = report(['notifications', 'orders'], suppress);

  it('lists each suppression that suppressed nothing, with why and similar names; used and other-broker ones are not listed', () => {
    expect(r.unusedSuppressions).toEqual([
      { index: 0, rule: 'sqs.no-redrive-policy', queue: 'notifcations', why: 'queue pattern "notifcations" matches no audited queue; similar: notifications' },
      { index: 3, rule: 'sqs.dlq-not-empty', queue: 'orders', why: 'rule sqs.dlq-not-empty found nothing to suppress on the queues "orders" matches (fixed? then remove the suppression)' },
    ]);
    // Not a failure: only the real finding on notifications counts.
    expect(r.counts.error).toBe(1);
    expect(r.counts.suppressed).toBe(1);
    const off = evaluateAudit([{ broker: 'sqs', label: 'sqs://test', servers: [], queues: [sqsFacts('orders')], notes: [] }], {
      config: { ...defaultProjectConfig().audit, severity: { 'sqs.short-polling': 'off' }, suppress: [{ rule: 'sqs.short-polling', queue: 'orders', reason: 'long polling later' }] },
      measurements: new Map(),
      now: 0,
    });
    expect(off.unusedSuppressions.map((u) => u.why)).toEqual(['rule sqs.short-polling is turned off in audit.severity']);
  });

  it('text line, json field, JUnit system-err (schema-valid, no failure), SARIF notification, Markdown section', async () => {
    const line = 'unused suppression audit.suppress[0] (sqs.no-redrive-policy on "notifcations"): queue pattern "notifcations" matches no audited queue; similar: notifications';
    expect(formatAuditReport(r, 'text').split('\n')).toContain(`warning: ${line}`);
    expect((JSON.parse(formatAuditReport(r, 'json')) as { unusedSuppressions: unknown[] }).unusedSuppressions).toHaveLength(2);
    const xml = formatAuditReport(r, 'junit');
    expect(await junitSchemaErrors([xml])).toEqual([]);
    const doc = parser.parse(xml) as { testsuites: { failures: string; testsuite: { name: string; testcase: { name: string; 'system-err'?: string }[] }[] } };
    const suite = doc.testsuites.testsuite.find((x) => x.name === 'queuescope.unused-suppressions');
    expect(suite?.testcase.map((c) => [c.name, c['system-err']])).toEqual([
      ['audit.suppress[0]', `warning: ${line}`],
      ['audit.suppress[3]', expect.stringContaining('warning: unused suppression audit.suppress[3]')],
    ]);
    expect(doc.testsuites.failures).toBe('1');
    const sarif = toSarif(r) as { runs: { invocations: { toolExecutionNotifications: { level: string; message: { text: string } }[] }[] }[] };
    expect(sarif.runs[0]?.invocations[0]?.toolExecutionNotifications).toContainEqual({ level: 'warning', message: { text: line }, descriptor: { id: 'queuescope.unused-suppression' } });
    const md = formatAuditReport(r, 'markdown');
    expect(md).toContain('## Unused suppressions');
    expect(md).toContain('- audit.suppress\\[0\\] · sqs.no-redrive-policy on notifcations: queue pattern "notifcations" matches no audited queue; similar: notifications');
    expect(formatAuditReport(report(['orders']), 'markdown')).not.toContain('Unused suppressions');
  });
});

describe('similarNames', () => {
  it('suggests close names for a typo and nothing for an unrelated pattern', () => {
    const names = ['notifications', 'orders', 'orders-dlq', 'payments', 'audit.work'];
    expect(similarNames('notifcations', names)).toEqual(['notifications']);
    expect(similarNames('ordrs*', names)).toEqual(['orders', 'orders-dlq']);
    expect(similarNames('*work*', names)).toEqual(['audit.work']);
    expect(similarNames('zzz*', names)).toEqual([]);
  });

  it('any pattern: at most 5 of the given names, no duplicates', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 30 }), fc.array(fc.string({ maxLength: 30 }), { maxLength: 30 }), (pattern, names) => {
        const got = similarNames(pattern, names);
        expect(got.length).toBeLessThanOrEqual(5);
        expect(new Set(got).size).toBe(got.length);
        for (const g of got) expect(names).toContain(g);
      }),
      { numRuns: 300 },
    );
  });
});

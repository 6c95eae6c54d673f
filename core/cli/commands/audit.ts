import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { resolve as resolvePath } from 'node:path';
import { Option, type Command } from 'commander';
import { QueuescopeError } from '../../../shared/domain';
import { AUDIT_FORMATS, AUDIT_RULES, failsThreshold, formatAuditReport, summaryLine, unusedSuppressionText, type AuditFormat } from '../../../shared/audit';
import { runAudit } from '../../audit/run';
import { findProjectConfig } from '../../config/project-file';
import type { BrokerAdapter } from '../../adapters/types';
import { brokerConnectionOptions, refuseSnapshot, type CliContext, type CommonOpts } from '../context';
import { EXIT } from '../exit-codes';
import { escapeForTerminal, toJson } from '../format';
import { projectFileNote } from '../resolve-config';

interface AuditOpts extends CommonOpts {
  queues?: string;
  config?: string;
  format?: AuditFormat;
  output?: string;
  failOn?: 'error' | 'warning' | 'none';
  measurements?: string;
  sampleMessages?: string;
  listRules?: boolean;
}

function listRules(): string {
  const lines = AUDIT_RULES.map((r) => {
    const t = Object.entries(r.meta.thresholds)
      .map(([k, v]) => `${k}=${String(v.default)}`)
      .join(', ');
    return `${r.meta.severity.padEnd(8)} ${r.meta.id}${t ? `  [${t}]` : ''}\n         ${r.meta.title}. ${r.meta.docUrl}`;
  });
  return `${lines.join('\n')}\n`;
}

/**
 * `queuescope audit [connections...]`: the pre-release configuration audit of one or more
 * connections (SQS, RabbitMQ, Redis) against the rule catalog (shared/audit), configured by the
 * project file's `audit` section. Exit code 6 when an unsuppressed finding is at or above `--fail-on`.
 */
const SNAPSHOT_WHY = 'the audit reads live broker configuration, which a snapshot does not hold. Give a broker connection.';

export function register(program: Command, ctx: CliContext): void {
  brokerConnectionOptions(
    program
      .command('audit')
      .description('check queue configuration for message loss and duplicates (dead-lettering, retention, timeouts, persistence) before a release')
      .argument('[connections...]', 'one or more URLs or saved connections (default: from the environment)')
      .option('--queues <pattern>', 'only queues whose name matches (* wildcard); exit 4 (queue not found) when it, or the config\'s audit.queues, matches no queue (also when the connections hold no queue to audit, e.g. an empty vhost)')
      .option('--config <file>', 'project file (default: queuescope.config.json/.yaml found upward from here)')
      .addOption(new Option('--format <format>', 'output format').choices([...AUDIT_FORMATS]).default('text'))
      .option('--output <file>', 'write the report to a file (the summary still goes to stderr)')
      .addOption(new Option('--fail-on <severity>', 'exit 6 when a finding (not suppressed) is at or above this severity').choices(['error', 'warning', 'none']).default('error'))
      .option('--measurements <file>', 'processing-time measurements (`queuescope tune --json` output, or {"queues":{"<name>":{"p99Ms":…,"meanMs":…}}}); overrides audit.measurements')
      .option('--sample-messages <n>', 'SQS: receive up to N messages per queue to check payload sizes and MessageDeduplicationId (counts toward maxReceiveCount; off by default)')
      .option('--list-rules', 'print the rule catalog and exit (with --json or --format json: the rules as JSON)'),
  ).action(async (connections: string[], opts: AuditOpts) => {
    if (opts.listRules === true) {
      ctx.out(opts.json === true || opts.format === 'json' ? toJson(AUDIT_RULES.map((r) => r.meta)) : listRules());
      return;
    }
    refuseSnapshot('audit', SNAPSHOT_WHY, opts, 'audit');
    const format: AuditFormat = opts.json === true ? 'json' : (opts.format ?? 'text');
    let sample: number | undefined;
    if (opts.sampleMessages !== undefined) {
      sample = Number(opts.sampleMessages);
      if (!Number.isInteger(sample) || sample < 0 || sample > 100) throw new QueuescopeError('INVALID_INPUT', `--sample-messages must be a whole number from 0 to 100, got "${escapeForTerminal(opts.sampleMessages.slice(0, 40))}".`);
    }
    const targets: (string | undefined)[] = connections.length > 0 ? connections : [undefined];
    if (targets.length > 1 && opts.profile !== undefined) throw new QueuescopeError('INVALID_INPUT', 'Give either connections or --profile, not both.');
    const adapters: BrokerAdapter[] = [];
    try {
      for (const c of targets) {
        const { adapter } = await ctx.connect({
          ...(c !== undefined ? { connection: c } : {}),
          ...(opts.profile !== undefined ? { profile: opts.profile } : {}),
          ...(opts.file !== undefined ? { file: opts.file } : {}),
          ...(opts.managementUrl !== undefined ? { managementUrl: opts.managementUrl } : {}),
        });
        adapters.push(adapter);
        refuseSnapshot('audit', SNAPSHOT_WHY, adapter, 'audit');
      }
      const fileNote = opts.config === undefined ? projectFileNote(findProjectConfig(ctx.cwd), existsSync) : null;
      if (fileNote !== null) ctx.err(`${escapeForTerminal(fileNote)}\n`);
      const report = await runAudit(
        adapters,
        {
          cwd: ctx.cwd,
          ...(opts.config !== undefined ? { configPath: opts.config } : {}),
          ...(opts.queues !== undefined ? { queuePattern: opts.queues } : {}),
          ...(opts.measurements !== undefined ? { measurementsPath: opts.measurements } : {}),
          ...(sample !== undefined ? { sampleMessages: sample } : {}),
        },
        ctx.signal,
      );
      const failOn = opts.failOn ?? 'error';
      const text = formatAuditReport(report, format, { failOn: failOn === 'none' ? 'error' : failOn, escape: escapeForTerminal, toolVersion: '0.1.0' });
      if (opts.output !== undefined) {
        const path = resolvePath(ctx.cwd, opts.output);
        try {
          await writeFile(path, text, 'utf8');
        } catch (e) {
          throw new QueuescopeError('INVALID_INPUT', `Cannot write ${path}: ${e instanceof Error ? e.message : String(e)}.`, { path });
        }
        ctx.err(`${escapeForTerminal(summaryLine(report))}; ${format} report written to ${escapeForTerminal(path)}\n`);
      } else ctx.out(text);
      // Unused suppressions are a warning, never a failure; the text report has them inline, other formats and files get them on stderr too.
      if (format !== 'text' || opts.output !== undefined) for (const u of report.unusedSuppressions) ctx.err(`warning: ${escapeForTerminal(unusedSuppressionText(u))}\n`);
      if (failOn !== 'none' && failsThreshold(report, failOn)) ctx.setExitCode(EXIT.FINDINGS);
    } finally {
      for (const a of adapters) await a.close().catch(() => undefined);
    }
  });
}

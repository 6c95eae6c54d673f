import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, open, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { z } from 'zod';
import { QueuescopeError, redactSecrets, redactValue } from '../../shared/domain';
import { defaultConfigDir } from './profile-store';

/**
 * # Queuescope audit log
 *
 * An append-only JSON Lines file, `<configDir>/audit-log.jsonl` (configDir: see
 * {@link defaultConfigDir}), with one line per operation that changed a broker: a redrive, a
 * re-inject of a snapshot, a visibility-timeout change, an applied audit fix… Both the app and the
 * CLI append to it; the app shows it (API `redrive.history`), the CLI prints it (`queuescope history`).
 *
 * - Each entry is written with ONE `write(2)` on a file opened with `O_APPEND`, then fsynced, so
 *   concurrent writers (the app and a CLI) never interleave inside a line on a local file system.
 *   A line cut by a crash is repaired on the next append (a newline is added before the new entry),
 *   and readers skip it, counting it in {@link AuditLogPage.skippedLines}.
 * - Entries never hold secrets: every string is passed through `redactSecrets` and keys that look
 *   like secrets are replaced (`redactValue`); callers pass connection *labels*
 *   (`describeConnection`), never configs.
 * - An entry is at most {@link MAX_AUDIT_LINE_BYTES}; larger `details` are replaced by a note.
 * - Nothing in the file is ever rewritten or deleted by Queuescope.
 */

/** File name inside the config folder. */
export const AUDIT_LOG_FILE = 'audit-log.jsonl';
/** Largest line written, bytes (details that do not fit are replaced by a note). */
export const MAX_AUDIT_LINE_BYTES = 64 * 1024;
/** Current entry version. */
export const AUDIT_ENTRY_VERSION = 1;

/** Who did it. */
export type AuditActor = 'app' | 'cli';

/**
 * Known actions; any other short identifier (`[a-z0-9-]`) is accepted too so new features can log
 * without changing this file.
 */
export type AuditAction = 'redrive' | 'reinject' | 'apply-visibility-timeout' | 'audit-fix' | (string & {});

const countsSchema = z.record(z.string(), z.number());

/** zod schema of one audit-log line. Unknown fields are kept (later additions stay readable). */
export const auditEntrySchema = z.looseObject({
  version: z.literal(AUDIT_ENTRY_VERSION),
  id: z.string().min(1).max(128),
  /** When the operation finished (or was logged), ms since epoch. */
  time: z.number().int().nonnegative(),
  actor: z.enum(['app', 'cli']),
  action: z.string().regex(/^[a-z0-9][a-z0-9.-]{0,63}$/),
  /** Connection label without secrets, e.g. `amqp://guest@127.0.0.1:5672/`. */
  connection: z.string().max(4096).nullable(),
  source: z.string().max(4096).nullable(),
  target: z.string().max(4096).nullable(),
  /** The selection / filter in words or as given (e.g. `class:transient age>1h`). */
  filter: z.string().max(8192).nullable(),
  /** Outcome status: `completed`, `failed`, `cancelled`, `dry-run`, … */
  status: z.string().max(64).nullable(),
  counts: countsSchema,
  operationId: z.string().max(128).nullable(),
  backupPath: z.string().max(4096).nullable(),
  details: z.record(z.string(), z.unknown()),
});

/** One audit-log entry (see {@link auditEntrySchema}). */
export type AuditEntry = z.infer<typeof auditEntrySchema>;

/** What a caller passes to {@link AuditLog.append}; `id`, `time` and `version` are filled in when absent. */
export interface AuditEntryInput {
  actor: AuditActor;
  action: AuditAction;
  connection?: string | null;
  source?: string | null;
  target?: string | null;
  filter?: string | null;
  status?: string | null;
  /** Counts by name (`moved`, `skipped`, `failed`, `possibleDuplicates`…). */
  counts?: Record<string, number>;
  operationId?: string | null;
  backupPath?: string | null;
  details?: Record<string, unknown>;
  /** ms since epoch; default now. */
  time?: number;
  id?: string;
}

/** A page of the log, newest first. */
export interface AuditLogPage {
  entries: AuditEntry[];
  /** Valid entries in the whole file. */
  total: number;
  /** Lines that were not valid entries (bad JSON, wrong shape, a line cut by a crash); skipped. */
  skippedLines: number;
  /**
   * Pass as `before` to get the next (older) page; null when there is none. It is the index (0 =
   * oldest valid entry) of the oldest entry on this page.
   */
  nextBefore: number | null;
}

/** Options of {@link AuditLog.read}. */
export interface AuditReadOptions {
  /** Entries per page, 1–1000 (default 50). */
  limit?: number;
  /** Only entries with index < `before` (from {@link AuditLogPage.nextBefore}); default: from the newest. */
  before?: number;
  /** Only these actions. */
  action?: string;
}

/**
 * Appends to and reads the audit log. Appends from one instance are serialised; appends from
 * other processes are safe as described on this module.
 */
export class AuditLog {
  /** Full path of the log file. */
  readonly path: string;
  private chain: Promise<unknown> = Promise.resolve();

  /**
   * @param options.path the log file (tests); default `<configDir>/audit-log.jsonl`.
   * @param options.configDir default {@link defaultConfigDir}.
   */
  constructor(options: { path?: string; configDir?: string; now?: () => number } = {}) {
    this.path = options.path ?? join(options.configDir ?? defaultConfigDir(), AUDIT_LOG_FILE);
    this.now = options.now ?? Date.now;
  }

  private readonly now: () => number;

  /**
   * Appends one entry (redacted) and fsyncs it. Resolves with the entry as written.
   * @throws QueuescopeError `INVALID_INPUT` for an action that is not a short lowercase identifier;
   *   `PERMISSION_DENIED` / `INTERNAL` when the file cannot be written (naming the path).
   */
  append(input: AuditEntryInput): Promise<AuditEntry> {
    const run = this.chain.then(
      () => this.doAppend(input),
      () => this.doAppend(input),
    );
    this.chain = run.catch(() => undefined);
    return run;
  }

  private async doAppend(input: AuditEntryInput): Promise<AuditEntry> {
    const entry = toEntry(input, this.now());
    let line = `${JSON.stringify(entry)}\n`;
    if (Buffer.byteLength(line) > MAX_AUDIT_LINE_BYTES) {
      entry.details = { note: `details omitted: the entry was larger than ${MAX_AUDIT_LINE_BYTES} bytes` };
      if (entry.filter !== null && entry.filter.length > 2000) entry.filter = `${entry.filter.slice(0, 2000)}…`;
      line = `${JSON.stringify(entry)}\n`;
    }
    const dir = join(this.path, '..');
    let fh: FileHandle | null = null;
    try {
      await mkdir(dir, { recursive: true, mode: 0o700 });
      fh = await open(this.path, 'a+', 0o600);
      const { size } = await fh.stat();
      if (size > 0) {
        // A crash can leave a line without its newline; start ours on a fresh line.
        const last = Buffer.alloc(1);
        await fh.read(last, 0, 1, size - 1);
        if (last[0] !== 0x0a) line = `\n${line}`;
      }
      const data = Buffer.from(line, 'utf8');
      const { bytesWritten } = await fh.write(data, 0, data.length);
      if (bytesWritten !== data.length) throw new Error(`short write (${bytesWritten} of ${data.length} bytes)`);
      await fh.sync();
    } catch (e) {
      throw writeError(e, this.path);
    } finally {
      await fh?.close().catch(() => undefined);
    }
    return entry;
  }

  /**
   * Reads one page, newest first, streaming the file (memory bounded by the page size). A missing
   * file is an empty log. An operation's `status: 'started'` entry is left out once a later entry of
   * the same `operationId` ended it; one without an end (the process was killed) is kept — it is
   * then the only record of that run and of its backup.
   * @throws QueuescopeError `INVALID_INPUT` for a bad `limit`/`before`; `PERMISSION_DENIED` when unreadable.
   */
  async read(options: AuditReadOptions = {}, signal?: AbortSignal): Promise<AuditLogPage> {
    const limit = options.limit ?? 50;
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new QueuescopeError('INVALID_INPUT', `The audit log page size must be a whole number from 1 to 1000, got ${String(limit)}.`);
    const before = options.before ?? Number.POSITIVE_INFINITY;
    if (options.before !== undefined && (!Number.isInteger(before) || before < 0)) throw new QueuescopeError('INVALID_INPUT', `"before" must be a whole number ≥ 0, got ${String(before)}.`);
    const window: { index: number; entry: AuditEntry }[] = [];
    let total = 0;
    let skippedLines = 0;
    let matchedBefore = 0;
    try {
      const rl = createInterface({ input: createReadStream(this.path, { encoding: 'utf8' }), crlfDelay: Number.POSITIVE_INFINITY });
      for await (const text of rl) {
        if (signal?.aborted === true) throw new QueuescopeError('CANCELLED', 'Reading the audit log was cancelled.');
        if (text.trim() === '') continue;
        const entry = parseAuditLine(text);
        if (entry === null) {
          skippedLines++;
          continue;
        }
        const index = total++;
        if (index >= before) continue;
        if (options.action !== undefined && entry.action !== options.action) continue;
        if (entry.status !== 'started' && entry.operationId !== null) {
          // The run ended: its "started" entry (written first, for a process killed mid-run) is not shown.
          const at = window.findIndex((w) => w.entry.status === 'started' && w.entry.operationId === entry.operationId);
          if (at >= 0) {
            window.splice(at, 1);
            matchedBefore--;
          }
        }
        matchedBefore++;
        window.push({ index, entry });
        if (window.length > limit) window.shift();
      }
    } catch (e) {
      if (e instanceof QueuescopeError) throw e;
      const code = (e as NodeJS.ErrnoException | null)?.code;
      if (code === 'ENOENT') return { entries: [], total: 0, skippedLines: 0, nextBefore: null };
      if (code === 'EACCES' || code === 'EPERM') throw new QueuescopeError('PERMISSION_DENIED', `No permission to read the audit log ${this.path}.`, { path: this.path }, { cause: e });
      throw new QueuescopeError('INTERNAL', `Reading the audit log ${this.path} failed: ${e instanceof Error ? e.message : String(e)}`, { path: this.path }, { cause: e });
    }
    const oldest = window[0];
    return {
      entries: window.map((w) => w.entry).reverse(),
      total,
      skippedLines,
      nextBefore: oldest !== undefined && matchedBefore > window.length ? oldest.index : null,
    };
  }
}

/**
 * Finds an entry by id (the newest with that id), streaming the file; null when there is none.
 * @throws like {@link AuditLog.read}.
 */
export async function findAuditEntry(log: AuditLog, id: string, signal?: AbortSignal): Promise<AuditEntry | null> {
  let found: AuditEntry | null = null;
  try {
    const rl = createInterface({ input: createReadStream(log.path, { encoding: 'utf8' }), crlfDelay: Number.POSITIVE_INFINITY });
    for await (const text of rl) {
      if (signal?.aborted === true) throw new QueuescopeError('CANCELLED', 'Reading the audit log was cancelled.');
      if (!text.includes(id)) continue;
      const e = parseAuditLine(text);
      if (e?.id === id) found = e;
    }
  } catch (e) {
    if (e instanceof QueuescopeError) throw e;
    if ((e as NodeJS.ErrnoException | null)?.code === 'ENOENT') return null;
    throw new QueuescopeError('INTERNAL', `Reading the audit log ${log.path} failed: ${e instanceof Error ? e.message : String(e)}`, { path: log.path }, { cause: e });
  }
  return found;
}

/**
 * Every valid entry whose line contains `needle` (compared as text, before parsing: pass a token such
 * as an id that JSON does not escape), oldest first, streaming the whole file in one pass (not
 * limited to a page; a `started` entry is kept even when its run ended — the caller decides). A
 * missing file gives none.
 * @throws QueuescopeError `CANCELLED` when `signal` aborts; `PERMISSION_DENIED` / `INTERNAL` when the file cannot be read.
 */
export async function findAuditEntriesContaining(log: AuditLog, needle: string, signal?: AbortSignal): Promise<AuditEntry[]> {
  const out: AuditEntry[] = [];
  try {
    const rl = createInterface({ input: createReadStream(log.path, { encoding: 'utf8' }), crlfDelay: Number.POSITIVE_INFINITY });
    for await (const text of rl) {
      if (signal?.aborted === true) throw new QueuescopeError('CANCELLED', 'Reading the audit log was cancelled.');
      if (!text.includes(needle)) continue;
      const e = parseAuditLine(text);
      if (e !== null) out.push(e);
    }
  } catch (e) {
    if (e instanceof QueuescopeError) throw e;
    const code = (e as NodeJS.ErrnoException | null)?.code;
    if (code === 'ENOENT') return [];
    if (code === 'EACCES' || code === 'EPERM') throw new QueuescopeError('PERMISSION_DENIED', `No permission to read the audit log ${log.path}.`, { path: log.path }, { cause: e });
    throw new QueuescopeError('INTERNAL', `Reading the audit log ${log.path} failed: ${e instanceof Error ? e.message : String(e)}`, { path: log.path }, { cause: e });
  }
  return out;
}

/** Parses one line; null when it is not a valid entry (never throws). */
export function parseAuditLine(text: string): AuditEntry | null {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return null;
  }
  const r = auditEntrySchema.safeParse(raw);
  return r.success ? r.data : null;
}

/**
 * Builds the stored entry: fills id/time/version, redacts every string and secret-looking key.
 * @throws QueuescopeError `INVALID_INPUT` for a bad action name.
 */
export function toEntry(input: AuditEntryInput, now: number): AuditEntry {
  if (!/^[a-z0-9][a-z0-9.-]{0,63}$/.test(input.action)) {
    throw new QueuescopeError('INVALID_INPUT', `Audit-log action must be a short lowercase identifier (a-z, 0-9, "-", "."), got "${input.action.slice(0, 80)}".`);
  }
  // Cut before redacting: redactSecrets is slow on very long strings.
  const str = (s: string | null | undefined, max = 4096): string | null => (s === undefined || s === null ? null : redactSecrets(s.slice(0, max)));
  const counts: Record<string, number> = {};
  for (const [k, v] of Object.entries(input.counts ?? {})) if (Number.isFinite(v)) counts[k] = v;
  return {
    version: AUDIT_ENTRY_VERSION,
    id: input.id ?? randomUUID(),
    time: Math.max(0, Math.round(input.time ?? now)),
    actor: input.actor,
    action: input.action,
    connection: str(input.connection),
    source: str(input.source),
    target: str(input.target),
    filter: str(input.filter, 8192),
    status: str(input.status, 64),
    counts,
    operationId: str(input.operationId, 128),
    backupPath: str(input.backupPath),
    details: (redactValue(clip(input.details ?? {}, 0)) as Record<string, unknown> | null) ?? {},
  };
}

/** Longest string kept in `details`, characters. */
const MAX_DETAIL_STRING = 2000;

/** Bounds plain data before redaction: long strings cut, at most 200 items / keys per level, depth 8. */
function clip(v: unknown, depth: number): unknown {
  if (typeof v === 'string') return v.length > MAX_DETAIL_STRING ? `${v.slice(0, MAX_DETAIL_STRING)}…` : v;
  if (depth > 8) return '[…]';
  if (Array.isArray(v)) return v.slice(0, 200).map((x) => clip(x, depth + 1));
  if (v !== null && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, val] of Object.entries(v).slice(0, 200)) out[k.slice(0, 200)] = clip(val, depth + 1);
    return out;
  }
  return typeof v === 'number' || typeof v === 'boolean' || v === null ? v : undefined;
}

function writeError(e: unknown, path: string): QueuescopeError {
  if (e instanceof QueuescopeError) return e;
  const code = (e as NodeJS.ErrnoException | null)?.code;
  if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') return new QueuescopeError('PERMISSION_DENIED', `No permission to write the audit log ${path}.`, { path }, { cause: e });
  return new QueuescopeError('INTERNAL', `Writing the audit log ${path} failed: ${e instanceof Error ? e.message : String(e)}`, { path }, { cause: e });
}

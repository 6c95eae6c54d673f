/**
 * # Queuescope snapshot format, version 1
 *
 * A snapshot is a UTF-8 **JSON Lines** file (one JSON object per line, `\n`-separated,
 * extension `.jsonl`; `.jsonl.gz` is the same content gzip-compressed). It is what
 * `export` writes, what File › Open and `queuescope peek --file` read, and the backup
 * format written before a redrive. It holds one or more **queue sections**:
 *
 * ```text
 * {"type":"queue","version":1,"exportedAt":1764441600000,"source":{...}}   ← section header
 * {"type":"message","id":"1-0","queueId":"stream:orders",...}             ← 0..n messages
 * {"type":"message",...}
 * {"type":"queue","version":1,...}                                        ← next section
 * ...
 * ```
 *
 * **Header line** (`type: "queue"`):
 * - `version` — always `1` for this format. Readers reject other versions.
 * - `exportedAt` — when the export started, ms since the Unix epoch.
 * - `source.broker` — the broker kind the messages came from (`redis`, `rabbitmq`, `sqs`, `snapshot`).
 * - `source.connection` — `describeConnection(config)`: a label **without secrets**
 *   (`amqp://guest@127.0.0.1:5672/`, never the password).
 * - `source.queue` — the {@link QueueSummary} of the queue at export time (counts, capabilities,
 *   dead-letter links, broker configuration).
 * - optional `state` — the peek state exported (e.g. BullMQ `failed`); absent = the default state.
 * - optional `selection` — `"all"` (default) or `"ids"` when only chosen message ids were exported.
 * - optional `partial` / `partialReason` — true when the section is known not to hold the whole
 *   queue/state (a broker that cannot page, e.g. RabbitMQ classic or SQS, exports one peek window),
 *   or a paged export missed or repeated messages (consumed meanwhile, a Redis list that moved
 *   beyond re-alignment): the writer then rewrites the header when the file is finished.
 * - `written` — what the writer wrote, filled in when it finished the file (the header is written
 *   first with `"written":null` and room for the value, then overwritten in place):
 *   `{ messages, section, sections }` = the message lines of this section, its 0-based index among
 *   the sections that writer wrote, and how many it wrote. A reader compares them with what the file
 *   holds, so a file cut at a line boundary (a truncated download or copy, a full disk) is
 *   reported as incomplete instead of reading as a smaller complete snapshot (a cut inside a line
 *   already fails as invalid JSON, a cut gzip stream as invalid gzip). `null` = the writer never
 *   finished: an export's `.partial` file renamed or copied, or a redrive backup whose run was
 *   killed, crashed or is still running (see the rules below): incomplete too. Absent = written by a Queuescope
 *   before this field (or by hand): readable, but whether it was cut cannot be checked. Files joined
 *   with `cat` keep each part's `written`, so a cut is still found per part — except a cut exactly
 *   between two joined files, which no field inside the first can reveal.
 * - optional `remainderOf` — `{ path, at }` in a re-inject's remainder file (`core/redrive/remainder.ts`):
 *   the snapshot whose unpublished messages it holds (absolute path) and when it was written (ms since epoch).
 * - optional `redriveRun` — `{ id }` in a redrive backup (`core/redrive/backup.ts`): the id of the redrive
 *   run that wrote it, which its audit-log entries carry (`operationId`, and `details.redriveRunId`), so
 *   a re-inject finds that run's record (the messages it did not move) whatever the file is called or
 *   where it was copied. Its time is `exportedAt` (when the run started). Absent in backups written
 *   before this field (looked up by their path) and never copied into a remainder file, which holds only
 *   messages a re-inject did not publish and so has no redrive record of its own.
 *
 * **Message line** (`type: "message"`): every field of {@link QueueMessage} (`id`, `queueId`,
 * `queueName`, `position`, `body`, `headers`, `properties`, `meta`) at the top level next to
 * `type`. Bodies are `{ encoding: "utf8", data: <text> }` when the bytes were valid UTF-8, else
 * `{ encoding: "base64", data: <base64> }`; `sizeBytes` is the original size in bytes and
 * `truncated` says the adapter cut the body at its read limit. Times in `meta` are ms since epoch.
 *
 * Rules:
 * - The first non-empty line of a file must be a header; message lines belong to the header above them.
 * - Empty lines are ignored; a `\r` before `\n` is tolerated.
 * - Unknown fields are ignored (later minor additions stay readable); missing or mistyped known
 *   fields make the line invalid. Readers report `SNAPSHOT_INVALID` naming the 1-based line number
 *   and the field path (e.g. `line 12: body.encoding …`).
 * - The export writer (`./writer.ts`) writes to `<path>.partial`, fsyncs, then renames to
 *   `<path>`, so an export under its final name was finished. A redrive backup
 *   (`core/redrive/backup.ts`) is not: it is written under its final name from the start (each
 *   batch fsynced before it moves) and finished only when the run ends, so a backup of a run that
 *   is still going, or was killed, is under its final name unfinished (`written` null). Neither
 *   kind is complete because of its name: a file may also be cut after it was written (a truncated
 *   copy). Readers decide completeness from `written`, never from the name.
 * - Message bodies are untrusted data: consumers must render them as text, never as HTML or
 *   terminal control sequences.
 *
 * @module
 */
import { z } from 'zod';
import { QueuescopeError, type BrokerKind, type QueueMessage, type QueueSummary } from '../../shared/domain';

/** The only version this code reads and writes. */
export const SNAPSHOT_VERSION = 1;

/**
 * Longest line, in bytes (UTF-8, without the `\n`), that a reader accepts and therefore that a
 * writer writes: 256 MiB. The largest body a redrive reads whole (`--max-body-bytes`, at most
 * 128 MiB, RabbitMQ's largest message) fits with its headers: base64 makes 128 MiB of binary
 * 171 MiB, and text up to 128 MiB fits while JSON escaping adds less than half again (a JSON body's
 * `"` become `\"`). A line this long is still a legal JavaScript string (V8's limit is 2^29 − 24
 * UTF-16 units) and reads with about 4× its size in memory. Writers check every line with
 * {@link snapshotLineProblem} / {@link checkedMessageLine} and refuse a longer one (a body of
 * control characters, `\u0001` taking 6 bytes each), so every line a writer writes reads back.
 */
export const MAX_SNAPSHOT_LINE_BYTES = 256 * 1024 * 1024;

const brokerKindSchema = z.enum(['redis', 'rabbitmq', 'sqs', 'snapshot']) satisfies z.ZodType<BrokerKind>;
const queueKindSchema = z.enum([
  'bullmq',
  'redis-stream',
  'redis-list',
  'rabbitmq-classic',
  'rabbitmq-quorum',
  'rabbitmq-stream',
  'sqs-standard',
  'sqs-fifo',
  'snapshot',
]);
const count = z.number().int().nonnegative().nullable();

const peekSideEffectSchema = z.looseObject({
  kind: z.enum(['redelivered-flag', 'delivery-count', 'may-dead-letter', 'temporarily-invisible', 'reorders']),
  description: z.string(),
});

const capabilitiesSchema = z.looseObject({
  canPeekNonDestructively: z.boolean(),
  peekSideEffects: z.array(peekSideEffectSchema),
  peekMayDeadLetter: z.boolean().nullable(),
  canPageFromCursor: z.boolean(),
  maxPeekWindow: z.number().int().nonnegative(),
  peekStates: z.array(z.string()),
});

const deadLetterTargetSchema = z.looseObject({
  queueId: z.string().nullable(),
  queueName: z.string().nullable(),
  via: z.string(),
  problem: z.string().optional(),
  maxReceiveCount: z.number().nullable().optional(),
});

/** zod schema of a {@link QueueSummary} as stored in a header line. */
export const queueSummarySchema = z.looseObject({
  id: z.string().min(1),
  name: z.string(),
  broker: brokerKindSchema,
  kind: queueKindSchema,
  depth: count,
  inFlight: count,
  delayed: count,
  consumers: count,
  counts: z.record(z.string(), z.number()),
  deadLetterTargets: z.array(deadLetterTargetSchema),
  deadLetterSources: z.array(z.string()),
  isDeadLetterQueue: z.boolean(),
  capabilities: capabilitiesSchema,
  config: z.record(z.string(), z.unknown()),
});

/** zod schema of the header line that opens a queue section. */
export const snapshotHeaderSchema = z.looseObject({
  type: z.literal('queue'),
  version: z.literal(SNAPSHOT_VERSION),
  exportedAt: z.number().int().nonnegative(),
  source: z.looseObject({
    broker: brokerKindSchema,
    connection: z.string().max(4096),
    queue: queueSummarySchema,
  }),
  state: z.string().max(64).optional(),
  selection: z.enum(['all', 'ids']).optional(),
  partial: z.boolean().optional(),
  partialReason: z.string().optional(),
  written: z
    .looseObject({
      messages: z.number().int().nonnegative(),
      section: z.number().int().nonnegative(),
      sections: z.number().int().positive(),
    })
    .nullable()
    .optional(),
  remainderOf: z.looseObject({ path: z.string(), at: z.number().int().nonnegative() }).optional(),
  redriveRun: z.looseObject({ id: z.string().min(1).max(128) }).optional(),
});

type HeaderValueT = string | number | boolean | null | HeaderValueT[] | { [k: string]: HeaderValueT };
const headerValueSchema: z.ZodType<HeaderValueT> = z.lazy(() =>
  z.union([z.string(), z.number(), z.boolean(), z.null(), z.array(headerValueSchema), z.record(z.string(), headerValueSchema)]),
);

const nnum = z.number().nullable().optional();
const nstr = z.string().nullable().optional();
const metaSchema = z.looseObject({
  state: z.string().optional(),
  enqueuedAt: nnum,
  firstReceivedAt: nnum,
  receiveCount: nnum,
  redelivered: z.boolean().nullable().optional(),
  idleMs: nnum,
  consumer: nstr,
  consumerGroup: nstr,
  jobName: z.string().optional(),
  attemptsMade: z.number().optional(),
  attemptsLimit: nnum,
  failedReason: nstr,
  stacktrace: z.array(z.string()).optional(),
  processedOn: nnum,
  finishedOn: nnum,
  delayMs: nnum,
  xDeath: z
    .array(
      z.looseObject({
        count: z.number(),
        reason: z.string(),
        queue: z.string(),
        exchange: z.string(),
        routingKeys: z.array(z.string()),
        time: z.number().nullable(),
      }),
    )
    .optional(),
  firstDeathReason: nstr,
  firstDeathQueue: nstr,
  firstDeathExchange: nstr,
  exchange: nstr,
  routingKey: nstr,
  messageGroupId: nstr,
  messageDeduplicationId: nstr,
  sequenceNumber: nstr,
});

const bodySchema = z
  .looseObject({
    encoding: z.enum(['utf8', 'base64']),
    data: z.string(),
    sizeBytes: z.number().int().nonnegative(),
    truncated: z.boolean(),
  })
  .refine((b) => b.encoding !== 'base64' || /^[A-Za-z0-9+/]*={0,2}$/.test(b.data), { error: 'base64 body data is not valid base64', path: ['data'] });

/** zod schema of a message line: `type: "message"` plus every {@link QueueMessage} field. */
export const snapshotMessageSchema = z.looseObject({
  type: z.literal('message'),
  id: z.string(),
  queueId: z.string(),
  queueName: z.string(),
  position: z.number().int().nullable(),
  body: bodySchema,
  headers: z.record(z.string(), headerValueSchema),
  properties: z.record(z.string(), headerValueSchema),
  meta: metaSchema,
});

/** A parsed header line (see the format description at the top of this file). */
export interface SnapshotHeaderLine {
  type: 'queue';
  version: typeof SNAPSHOT_VERSION;
  /** When the export started, ms since epoch. */
  exportedAt: number;
  source: {
    broker: BrokerKind;
    /** `describeConnection(config)`: no secrets. */
    connection: string;
    queue: QueueSummary;
  };
  /** Peek state exported (e.g. BullMQ `failed`); absent = the default state. */
  state?: string;
  /** `ids` when only chosen messages were exported. */
  selection?: 'all' | 'ids';
  /** True when the section is known not to hold the whole queue/state. */
  partial?: boolean;
  partialReason?: string;
  /**
   * What the writer wrote, recorded when it finished (see the format description): `null` = it never
   * finished; absent = an older file without this record (completeness cannot be checked).
   */
  written?: SnapshotWrittenRecord | null;
  /**
   * In a re-inject's remainder file (`core/redrive/remainder.ts`): the snapshot whose unpublished
   * messages it holds (absolute path) and when it was written (ms since epoch). Absent elsewhere.
   */
  remainderOf?: { path: string; at: number };
  /**
   * In a redrive backup (`core/redrive/backup.ts`): the id of the redrive run that wrote it — the
   * `operationId` (and `details.redriveRunId`) of its audit-log entries. Absent in older backups, in
   * exports and in remainder files.
   */
  redriveRun?: { id: string };
}
/** The `written` record of a header: counts the reader checks the file against. */
export interface SnapshotWrittenRecord {
  /** Message lines the writer wrote in this section. */
  messages: number;
  /** 0-based index of this section among those the writer wrote. */
  section: number;
  /** Sections the writer wrote (≥ 1). */
  sections: number;
}
/** A parsed message line. */
export type SnapshotMessageLine = QueueMessage & { type: 'message' };
/** Either kind of line. */
export type SnapshotLine = SnapshotHeaderLine | SnapshotMessageLine;

/** What a writer needs for a header; `type` and `version` are filled in (`written` by the {@link SnapshotWriter}). */
export type SnapshotHeaderInput = Omit<SnapshotHeaderLine, 'type' | 'version'>;

/**
 * Bytes kept free after `"written":null` in a header line written before its counts are known: the
 * longest record (three numbers up to 2^53) needs 80 more than `null`.
 */
export const WRITTEN_RESERVE_BYTES = 96;

/** Where a line came from, for error messages. */
export interface LineLocation {
  /** File name or path shown to people. */
  file: string;
  /** 1-based line number. */
  line: number;
}

function invalid(loc: LineLocation, field: string | null, what: string): QueuescopeError {
  const where = field === null || field === '' ? `line ${loc.line}` : `line ${loc.line}, field "${field}"`;
  return new QueuescopeError('SNAPSHOT_INVALID', `Snapshot ${loc.file} is not valid at ${where}: ${what}`, {
    file: loc.file,
    line: loc.line,
    ...(field ? { field } : {}),
  });
}

function zodToSnapshotError(err: z.ZodError, loc: LineLocation): QueuescopeError {
  const issue = err.issues[0];
  if (issue === undefined) return invalid(loc, null, 'invalid line');
  const field = issue.path.map(String).join('.');
  const more = err.issues.length > 1 ? ` (and ${err.issues.length - 1} more problem${err.issues.length > 2 ? 's' : ''})` : '';
  return invalid(loc, field, `${issue.message}${more}.`);
}

/**
 * Parses the JSON value of one line (no schema check). Use when only a field or two is needed
 * (the snapshot adapter's index pass).
 * @throws QueuescopeError `SNAPSHOT_INVALID` when the line is not a JSON object.
 */
export function parseJsonLine(text: string, loc: LineLocation): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw invalid(loc, null, `not valid JSON (${e instanceof Error ? e.message : String(e)}).`);
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw invalid(loc, null, 'expected a JSON object.');
  return v as Record<string, unknown>;
}

/**
 * Validates an already-parsed line object against the header or message schema chosen by its `type`.
 * @throws QueuescopeError `SNAPSHOT_INVALID` naming the line and the first bad field.
 */
export function validateSnapshotLine(value: Record<string, unknown>, loc: LineLocation): SnapshotLine {
  const type = value.type;
  if (type === 'queue') {
    if (value.version !== SNAPSHOT_VERSION && typeof value.version === 'number') {
      throw invalid(loc, 'version', `snapshot version ${value.version} is not supported (this Queuescope reads version ${SNAPSHOT_VERSION}).`);
    }
    const r = snapshotHeaderSchema.safeParse(value);
    if (!r.success) throw zodToSnapshotError(r.error, loc);
    return value as unknown as SnapshotHeaderLine;
  }
  if (type === 'message') {
    const r = snapshotMessageSchema.safeParse(value);
    if (!r.success) throw zodToSnapshotError(r.error, loc);
    // The parsed JSON itself, not zod's copy: zod drops record keys such as "__proto__", and a
    // header of that name in an untrusted message must survive a round trip like any other.
    return value as unknown as SnapshotMessageLine;
  }
  throw invalid(loc, 'type', `expected "queue" or "message", got ${type === undefined ? 'nothing' : JSON.stringify(type).slice(0, 40)}.`);
}

/**
 * Parses and validates one line of text.
 * @throws QueuescopeError `SNAPSHOT_INVALID` naming the line number and the field.
 */
export function parseSnapshotLine(text: string, loc: LineLocation): SnapshotLine {
  return validateSnapshotLine(parseJsonLine(text, loc), loc);
}

/** Serialises a header as one line (with trailing `\n`). */
export function formatHeaderLine(header: SnapshotHeaderInput): string {
  // `type` and `version` first (sniffable), and they win over any stray keys in `header`.
  const fixed = { type: 'queue', version: SNAPSHOT_VERSION } as const;
  const line: SnapshotHeaderLine = Object.assign({ ...fixed }, header, fixed);
  return `${JSON.stringify(line)}\n`;
}

/**
 * Serialises a header as one line (with trailing `\n`) whose `written` is `record` (last key), padded
 * with spaces before the closing brace to `padTo` bytes (the length of the line written first with
 * `record` null, see {@link formatHeaderLine} with `reserve`), so it can overwrite that line in place.
 * Without `padTo` the line is not padded.
 * @throws QueuescopeError `INTERNAL` when the line is longer than `padTo`.
 */
export function formatWrittenHeaderLine(header: SnapshotHeaderInput, record: SnapshotWrittenRecord | null, padTo?: number): string {
  const { written: _old, ...rest } = header;
  const json = formatHeaderLine({ ...rest, written: record }).slice(0, -1);
  if (padTo === undefined) return `${json}\n`;
  const pad = padTo - Buffer.byteLength(json) - 1;
  if (pad < 0) throw new QueuescopeError('INTERNAL', `Snapshot header with its counts is ${String(-pad)} bytes longer than the room left for them.`);
  return `${json.slice(0, -1)}${' '.repeat(pad)}}\n`;
}

/**
 * Serialises a header as the line a writer writes before it knows its counts: `"written":null` and
 * {@link WRITTEN_RESERVE_BYTES} of room, so that {@link formatWrittenHeaderLine}`(header, record,
 * <this line's byte length>)` can overwrite it in place when the writer finishes. Used by the
 * export writer (`./writer.ts`) and the redrive backup (`core/redrive/backup.ts`).
 */
export function formatPendingHeaderLine(header: SnapshotHeaderInput): string {
  const unpadded = Buffer.byteLength(formatWrittenHeaderLine(header, null));
  return formatWrittenHeaderLine(header, null, unpadded + WRITTEN_RESERVE_BYTES);
}

/**
 * `partialReason` of the header of a redrive backup (`core/redrive/backup.ts`), which readers use to
 * word completeness for a backup (its writer is a redrive, not an export).
 */
export const REDRIVE_BACKUP_PARTIAL_REASON = 'redrive backup: the messages this redrive moved (or tried to), written before each was published';

/** True when `header` is a redrive backup's (see {@link REDRIVE_BACKUP_PARTIAL_REASON}). */
export function isRedriveBackupHeader(header: Pick<SnapshotHeaderLine, 'partialReason'>): boolean {
  return header.partialReason === REDRIVE_BACKUP_PARTIAL_REASON;
}

/** Serialises a message as one line (with trailing `\n`). `type` comes first so readers can sniff it. */
export function formatMessageLine(message: QueueMessage): string {
  return `${JSON.stringify({ type: 'message', ...message })}\n`;
}

/** `details.reason` of the error a writer throws for a line longer than {@link MAX_SNAPSHOT_LINE_BYTES}. */
export const SNAPSHOT_LINE_TOO_LONG = 'snapshot-line-too-long';

/**
 * The byte length (UTF-8, without the `\n`) of `message`'s line, or null when it is longer than
 * {@link MAX_SNAPSHOT_LINE_BYTES} or too long to serialise at all (a string beyond V8's limit).
 * Cheap for the usual message: an upper bound (6 bytes per UTF-16 unit of the body, the longest
 * JSON escape) decides without serialising the body; only a body near the limit is serialised.
 */
function messageLineBytes(message: QueueMessage): number | null {
  try {
    const rest = Buffer.byteLength(formatMessageLine({ ...message, body: { ...message.body, data: '' } })) - 1;
    if (rest + 6 * message.body.data.length <= MAX_SNAPSHOT_LINE_BYTES) return rest;
    const bytes = Buffer.byteLength(formatMessageLine(message)) - 1;
    return bytes <= MAX_SNAPSHOT_LINE_BYTES ? bytes : null;
  } catch (e) {
    if (e instanceof RangeError) return null; // "Invalid string length": longer than any line can be
    throw e;
  }
}

/**
 * Why `message` cannot be written to a snapshot (an export or a redrive backup), in words, or null
 * when it can: its line would be longer than {@link MAX_SNAPSHOT_LINE_BYTES}, the most a snapshot
 * reader accepts, so the file could not be read back. The words name the body's size and encoding.
 */
export function snapshotLineProblem(message: QueueMessage): string | null {
  if (messageLineBytes(message) !== null) return null;
  const mib = (n: number): string => `${(n / (1024 * 1024)).toFixed(1)} MiB`;
  return (
    `its snapshot line (the message as JSON, body ${mib(message.body.sizeBytes)} stored as ${message.body.encoding}) would be longer than ` +
    `${String(MAX_SNAPSHOT_LINE_BYTES)} bytes (${mib(MAX_SNAPSHOT_LINE_BYTES)}), the longest line a snapshot reader accepts, so it cannot be backed up or exported readably`
  );
}

/**
 * {@link formatMessageLine}, refusing a line a reader would reject.
 * @throws QueuescopeError `INVALID_INPUT` with `details: { reason: SNAPSHOT_LINE_TOO_LONG, id, maxLineBytes }`
 *   when the line would be longer than {@link MAX_SNAPSHOT_LINE_BYTES} (see {@link isSnapshotLineTooLong}).
 */
export function checkedMessageLine(message: QueueMessage): string {
  const problem = snapshotLineProblem(message);
  if (problem !== null) {
    throw new QueuescopeError('INVALID_INPUT', `Message ${message.id.slice(0, 200)} cannot be written: ${problem}.`, {
      reason: SNAPSHOT_LINE_TOO_LONG,
      id: message.id,
      maxLineBytes: MAX_SNAPSHOT_LINE_BYTES,
    });
  }
  return formatMessageLine(message);
}

/**
 * Refuses a header line a reader would reject (a header holds a queue's summary and configuration,
 * normally a few KiB).
 * @throws QueuescopeError `INVALID_INPUT` with `details.reason` {@link SNAPSHOT_LINE_TOO_LONG}.
 */
export function assertHeaderLineFits(line: string): void {
  if (Buffer.byteLength(line) - 1 > MAX_SNAPSHOT_LINE_BYTES) {
    throw new QueuescopeError('INVALID_INPUT', `The snapshot header would be longer than ${String(MAX_SNAPSHOT_LINE_BYTES)} bytes, the longest line a snapshot reader accepts.`, {
      reason: SNAPSHOT_LINE_TOO_LONG,
      maxLineBytes: MAX_SNAPSHOT_LINE_BYTES,
    });
  }
}

/** True when `e` is the error {@link checkedMessageLine} (or a writer) throws for a line that is too long. */
export function isSnapshotLineTooLong(e: unknown): e is QueuescopeError {
  return e instanceof QueuescopeError && e.details?.reason === SNAPSHOT_LINE_TOO_LONG;
}

/** Drops the `type` discriminator from a message line, giving the domain object. */
export function toQueueMessage(line: SnapshotMessageLine): QueueMessage {
  const { type: _type, ...rest } = line;
  return rest;
}

/** An error for a file whose first line is not a header. */
export function missingHeaderError(loc: LineLocation): QueuescopeError {
  return invalid(loc, 'type', 'a snapshot section must start with a "queue" header line before any "message" line.');
}

/** A structural error not tied to a field. */
export function snapshotLineError(loc: LineLocation, what: string): QueuescopeError {
  return invalid(loc, null, what);
}

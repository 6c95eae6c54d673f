import { readFile, stat } from 'node:fs/promises';
import { extname } from 'node:path';
import { QueuescopeError } from '../../shared/domain';
import { DurationImportError, parseDurations, type DurationFormat, type DurationUnit, type Measurement, type ParsedDurations } from '../../shared/tuning';

/** Largest durations file read, bytes (256 MiB). */
export const MAX_DURATIONS_FILE_BYTES = 256 * 1024 * 1024;

/** Options of {@link importDurations}. */
export interface ImportDurationsOptions {
  path: string;
  /** Default: from the extension (`.csv`/`.tsv` → csv, `.jsonl`/`.ndjson`/`.json` → jsonl, else log — which needs `regex`). */
  format?: DurationFormat;
  /** Unit of the numbers in the file (default ms). */
  unit?: DurationUnit;
  field?: string;
  regex?: string;
}

/** The format implied by a file name, or null. */
export function formatFromPath(path: string): DurationFormat | null {
  const ext = extname(path).toLowerCase();
  if (ext === '.csv' || ext === '.tsv') return 'csv';
  if (ext === '.jsonl' || ext === '.ndjson' || ext === '.json') return 'jsonl';
  if (ext === '.log' || ext === '.txt') return 'log';
  return null;
}

/**
 * Reads processing durations from a CSV / JSONL / log file (the `file` source). Units: the file's
 * numbers are in `unit` (ms or s); the measurement holds ms.
 * @throws QueuescopeError `INVALID_INPUT` for a missing/unreadable/too large file, an unknown format,
 *   a configuration the parser refuses (no duration column, bad regex), or a file with no duration at all.
 */
export async function importDurations(options: ImportDurationsOptions): Promise<Measurement> {
  const format = options.format ?? formatFromPath(options.path) ?? (options.regex !== undefined ? 'log' : null);
  if (format === null) throw new QueuescopeError('INVALID_INPUT', `Cannot tell the format of ${options.path}: pass --format csv|jsonl|log (log needs --regex).`, { path: options.path });
  let size: number;
  try {
    size = (await stat(options.path)).size;
  } catch (e) {
    throw new QueuescopeError('INVALID_INPUT', `Cannot read the durations file ${options.path}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'it does not exist' : e instanceof Error ? e.message : String(e)}.`, { path: options.path });
  }
  if (size > MAX_DURATIONS_FILE_BYTES) throw new QueuescopeError('INVALID_INPUT', `${options.path} is ${Math.round(size / 1048576)} MiB; at most ${MAX_DURATIONS_FILE_BYTES / 1048576} MiB is read.`, { path: options.path });
  const text = await readFile(options.path, 'utf8');
  let parsed;
  try {
    parsed = parseDurations(text, { format, unit: options.unit ?? 'ms', ...(options.field !== undefined ? { field: options.field } : {}), ...(options.regex !== undefined ? { regex: options.regex } : {}) });
  } catch (e) {
    if (e instanceof DurationImportError) throw new QueuescopeError('INVALID_INPUT', `${options.path}: ${e.message}`, { path: options.path });
    throw e;
  }
  return toMeasurement(parsed, options.path, format, options.unit ?? 'ms');
}

/**
 * Like {@link importDurations} for text the app sends (pasted or read in the renderer).
 * @throws QueuescopeError `INVALID_INPUT` as there.
 */
export function importDurationsText(text: string, options: { format: DurationFormat; unit?: DurationUnit; field?: string; regex?: string; label?: string }): Measurement {
  const label = options.label ?? 'the pasted durations';
  let parsed;
  try {
    parsed = parseDurations(text, { format: options.format, unit: options.unit ?? 'ms', ...(options.field !== undefined ? { field: options.field } : {}), ...(options.regex !== undefined ? { regex: options.regex } : {}) });
  } catch (e) {
    if (e instanceof DurationImportError) throw new QueuescopeError('INVALID_INPUT', `${label}: ${e.message}`);
    throw e;
  }
  return toMeasurement(parsed, label, options.format, options.unit ?? 'ms');
}

function toMeasurement(parsed: ParsedDurations, label: string, format: DurationFormat, unit: DurationUnit): Measurement {
  if (parsed.samplesMs.length === 0) {
    const why = parsed.problems.map((p) => (p.line > 0 ? `line ${p.line}: ${p.reason}` : p.reason)).join('; ');
    throw new QueuescopeError('INVALID_INPUT', `${label} holds no usable duration${why ? ` (${why})` : ''}.`, { source: label });
  }
  const notes: string[] = [`Read ${parsed.samplesMs.length.toLocaleString('en-US')} durations from ${label} (${format}${parsed.fieldUsed !== null ? `, ${format === 'log' ? 'regex' : 'field'} ${parsed.fieldUsed}` : ''}, unit ${unit}).`];
  if (parsed.skipped > 0) notes.push(`${parsed.skipped} line(s) skipped, e.g. ${parsed.problems.map((p) => `line ${p.line}: ${p.reason}`).join('; ')}.`);
  return {
    source: 'file',
    measures: 'processing durations exported from logs or an APM',
    confidence: 'imported',
    confidenceNote: 'As good as the export: make sure each value is one message\'s processing time (receive → ack), not end-to-end latency including queue wait.',
    samplesMs: parsed.samplesMs,
    meanMs: null,
    sampleErrorMs: null,
    redeliveries: null,
    retryPolicy: null,
    startedAt: null,
    endedAt: null,
    polls: 0,
    notes,
  };
}

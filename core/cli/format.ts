import Table from 'cli-table3';
import type { ConnectionProfile, MessageBody, PeekPage, QueueMessage, QueueSummary } from '../../shared/domain';
import { escapeCodeUnit, HIDDEN_CHAR_CLASS } from '../../shared/body/hidden-chars';
import { describeConnection } from '../../shared/domain';

/**
 * Characters that must never reach a terminal raw from untrusted data (message bodies, queue
 * names, header values): the hidden characters of {@link HIDDEN_CHAR_CLASS} (controls, bidi and
 * invisible formatting characters), plus tab, line breaks (one cell is one line) and lone surrogates.
 */
const UNSAFE = new RegExp(`[${HIDDEN_CHAR_CLASS}\\t\\n\\r\\ud800-\\udfff]`, 'g');

const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/**
 * Makes untrusted text safe for one terminal line: every unsafe character (see above) becomes a
 * visible escape (`\n`, `\x1b`, `\u202e`). Lone surrogates are escaped too; valid pairs are kept.
 */
export function escapeForTerminal(text: string): string {
  return text.replace(UNSAFE, (ch, offset: number, whole: string) => {
    const code = ch.charCodeAt(0);
    if (code >= 0xd800 && code <= 0xdbff) {
      const next = whole.charCodeAt(offset + 1);
      if (next >= 0xdc00 && next <= 0xdfff) return ch; // high half of a valid pair
    } else if (code >= 0xdc00 && code <= 0xdfff) {
      const prev = whole.charCodeAt(offset - 1);
      if (prev >= 0xd800 && prev <= 0xdbff) return ch; // low half of a valid pair
    }
    return NAMED[ch] ?? escapeCodeUnit(ch);
  });
}

/**
 * Escapes the same characters inside JSON text as `\uXXXX` (still valid JSON, same value), for
 * `--json` output: `JSON.stringify` escapes C0 controls but leaves C1 and bidi characters raw.
 */
export function escapeJsonForTerminal(json: string): string {
  return json.replace(UNSAFE, (ch, offset: number, whole: string) => {
    const code = ch.charCodeAt(0);
    if (code >= 0xd800 && code <= 0xdbff && (whole.charCodeAt(offset + 1) & 0xfc00) === 0xdc00) return ch;
    if (code >= 0xdc00 && code <= 0xdfff && (whole.charCodeAt(offset - 1) & 0xfc00) === 0xd800) return ch;
    if (code < 0x20) return ch; // only possible as a raw newline/indent from JSON.stringify itself
    return `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/** Cuts text to at most `max` code points, ending in `…` when cut. */
export function truncate(text: string, max: number): string {
  const chars = Array.from(text);
  if (chars.length <= max) return text;
  return `${chars.slice(0, Math.max(0, max - 1)).join('')}…`;
}

/**
 * Longest note, warning or problem text the CLI prints, in code points. These are Queuescope's own
 * sentences (with queue names and ids quoted in them): cutting them at a table width lost their
 * ends (the cause or the next step), so only runaway text is cut.
 */
export const NOTE_MAX = 2000;

/** One safe cell: escaped, then truncated. */
export function cell(text: string | number | null | undefined, max = 60): string {
  if (text === null || text === undefined) return '-';
  return truncate(escapeForTerminal(String(text)), max);
}

/**
 * A single-line preview of a body: text escaped and truncated; binary as
 * `<binary N bytes: ff fe 00 …>`; a body cut by the adapter ends in `[truncated]`.
 */
export function bodyPreview(body: MessageBody, max = 60): string {
  let text: string;
  if (body.encoding === 'base64') {
    const bytes = Buffer.from(body.data, 'base64');
    const hex = Array.from(bytes.subarray(0, 8), (b) => b.toString(16).padStart(2, '0')).join(' ');
    text = `<binary ${body.sizeBytes} bytes: ${hex}${bytes.length > 8 ? ' …' : ''}>`;
    return truncate(text, max);
  }
  text = truncate(escapeForTerminal(body.data.replace(/\s+/g, (ws) => (ws.includes('\n') || ws.includes('\r') ? ws : ' '))), max);
  return body.truncated ? `${text} [truncated]` : text;
}

function newTable(head: string[]): Table.Table {
  return new Table({ head, style: { head: [], border: [], compact: false }, wordWrap: false });
}

function n(v: number | null): string {
  return v === null ? '-' : String(v);
}

/** What a snapshot queue's `config.snapshot` says about the file; `null` for a live queue. */
function snapshotOf(q: QueueSummary): { messages: number; partial: boolean; partialReason: string | null } | null {
  const raw = q.config.snapshot;
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return null;
  const o = raw as Record<string, unknown>;
  if (typeof o.messages !== 'number') return null;
  return { messages: o.messages, partial: o.partial === true, partialReason: typeof o.partialReason === 'string' ? o.partialReason : null };
}

/**
 * Human table of queues: name, kind, depth, in flight, delayed, consumers, DLQ (→ target / ← sources).
 * For snapshot queues the counts are those recorded at export time, and an extra column
 * "in snapshot" shows how many messages the file holds (`N partial` when the section is partial,
 * with the reason in a note under the table).
 */
export function queuesTable(queues: readonly QueueSummary[], width = 100): string {
  const byId = new Map(queues.map((q) => [q.id, q.name]));
  const snaps = queues.map(snapshotOf);
  const anySnapshot = snaps.some((x) => x !== null);
  const nameMax = Math.max(16, Math.min(60, width - (anySnapshot ? 84 : 70)));
  const t = newTable(['name', 'kind', anySnapshot ? 'depth (recorded)' : 'depth', 'in flight', 'delayed', 'consumers', ...(anySnapshot ? ['in snapshot'] : []), 'DLQ']);
  const notes: string[] = [];
  queues.forEach((q, i) => {
    const links = [
      ...q.deadLetterTargets.map((d) => `→ ${d.queueName ?? d.queueId ?? '?'}${d.problem !== undefined ? ' (!)' : ''}`),
      ...(q.deadLetterSources.length > 0 ? [`← ${q.deadLetterSources.map((s) => byId.get(s) ?? s).join(', ')}`] : q.isDeadLetterQueue ? ['(DLQ)'] : []),
    ];
    const snap = snaps[i] ?? null;
    const inFile = anySnapshot ? [snap === null ? '-' : `${snap.messages}${snap.partial ? ' partial' : ''}`] : [];
    t.push([cell(q.name, nameMax), cell(q.kind), n(q.depth), n(q.inFlight), n(q.delayed), n(q.consumers), ...inFile, cell(links.join(' ') || '-', 40)]);
    for (const d of q.deadLetterTargets) if (d.problem !== undefined) notes.push(`(!) ${cell(q.name, 60)}: ${cell(d.problem, NOTE_MAX)}`);
    if (snap?.partial === true) notes.push(`partial: ${cell(q.name, 60)}: ${cell(snap.partialReason ?? 'the snapshot does not hold the whole queue', 600)}`);
  });
  if (anySnapshot) notes.push('Depth, in flight, delayed and consumers are as recorded when the snapshot was exported; "in snapshot" is what the file holds.');
  return `${t.toString()}\n${notes.length > 0 ? `${notes.join('\n')}\n` : ''}${queues.length} queue${queues.length === 1 ? '' : 's'}\n`;
}

/** `YYYY-MM-DD HH:MM:SSZ` (UTC) or `-`. */
export function formatTime(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '-';
  const d = new Date(ms);
  return Number.isNaN(d.getTime()) ? '-' : `${d.toISOString().slice(0, 19).replace('T', ' ')}Z`;
}

/** Receive count (SQS/quorum/stream) or BullMQ attempts `made/limit`. */
export function receivesCell(m: QueueMessage): string {
  const meta = m.meta;
  if (meta.attemptsMade !== undefined) return `${meta.attemptsMade}/${meta.attemptsLimit ?? '?'}`;
  if (meta.receiveCount !== undefined && meta.receiveCount !== null) return String(meta.receiveCount);
  if (meta.redelivered === true) return 'redelivered';
  return '-';
}

/** Human table of a peek page plus a footer with the count and the next cursor. */
export function peekTable(page: PeekPage, width = 100): string {
  const previewMax = Math.max(20, Math.min(120, width - 80));
  const t = newTable(['id', 'enqueued', 'receives', 'state', 'body']);
  for (const m of page.messages) t.push([cell(m.id, 28), formatTime(m.meta.enqueuedAt), cell(receivesCell(m)), cell(m.meta.state ?? '-', 12), bodyPreview(m.body, previewMax)]);
  const lines = [t.toString(), `${page.messages.length} message${page.messages.length === 1 ? '' : 's'}${page.total !== null ? ` of ${page.total}` : ''}`];
  if (page.nextCursor !== null) lines.push(`next page: --cursor ${cell(page.nextCursor, 200)}`);
  return `${lines.join('\n')}\n`;
}

/** Human table of saved connections. */
export function connectionsTable(profiles: readonly ConnectionProfile[]): string {
  const t = newTable(['name', 'id', 'kind', 'connection', 'secret']);
  for (const p of profiles) t.push([cell(p.name, 40), cell(p.id, 40), p.config.kind, cell(describeConnection(p.config), 60), p.hasSecret ? 'stored' : '-']);
  return `${t.toString()}\n${profiles.length} saved connection${profiles.length === 1 ? '' : 's'}\n`;
}

/** JSON for `--json`: pretty, with terminal-unsafe characters escaped (see {@link escapeJsonForTerminal}). */
export function toJson(value: unknown): string {
  return `${escapeJsonForTerminal(JSON.stringify(value, null, 2))}\n`;
}

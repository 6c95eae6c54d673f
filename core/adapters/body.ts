import { isUtf8 } from 'node:buffer';
import type { HeaderValue, MessageBody } from '../../shared/domain';

/** Default body limit (bytes) when `PeekOptions.maxBodyBytes` is absent: 1 MiB + 1 KiB, so a 1 MiB SQS body fits. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024 + 1024;

/**
 * Turns raw body bytes into a {@link MessageBody}: `utf8` text when the bytes are valid UTF-8,
 * else `base64` of the raw bytes, so binary bodies survive exactly. Bodies longer than
 * `maxBytes` are cut (at a character boundary for text) with `truncated: true`; `sizeBytes` is
 * always the full size in bytes. Shared by every adapter that reads bytes (Redis, RabbitMQ).
 */
export function toMessageBody(bytes: Uint8Array | null | undefined, maxBytes: number): MessageBody {
  if (!bytes || bytes.length === 0) return { encoding: 'utf8', data: '', sizeBytes: 0, truncated: false };
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const size = buf.length;
  const truncated = size > maxBytes;
  const slice = truncated ? buf.subarray(0, Math.max(0, maxBytes)) : buf;
  if (isUtf8(buf)) {
    return { encoding: 'utf8', data: (truncated ? utf8Prefix(slice) : slice).toString('utf8'), sizeBytes: size, truncated };
  }
  return { encoding: 'base64', data: slice.toString('base64'), sizeBytes: size, truncated };
}

/** `b` (a prefix of valid UTF-8) without a character split at its end: drops up to 3 bytes. */
function utf8Prefix(b: Buffer): Buffer {
  for (let end = b.length; end > Math.max(0, b.length - 4); end--) {
    const s = b.subarray(0, end);
    if (isUtf8(s)) return s;
  }
  return b.subarray(0, 0);
}

/** Cuts an already-decoded body to at most `max` bytes (at a UTF-8 boundary for text), keeping `sizeBytes`. */
export function truncateBody(body: MessageBody, max: number): MessageBody {
  // Cheap exit without encoding the data (`sizeBytes` is not trusted: it comes from files too):
  // the text cannot exceed `max` bytes (a UTF-16 code unit is at most 3 UTF-8 bytes; 4 base64
  // characters decode to at most 3 bytes).
  if (body.encoding === 'utf8' ? body.data.length * 3 <= max : (body.data.length / 4) * 3 <= max) return body;
  const buf = Buffer.from(body.data, body.encoding === 'utf8' ? 'utf8' : 'base64');
  if (buf.length <= max) return body;
  const cut = buf.subarray(0, max);
  return body.encoding === 'utf8'
    ? { ...body, data: utf8Prefix(cut).toString('utf8'), truncated: true }
    : { ...body, data: cut.toString('base64'), truncated: true };
}

/** A header value from raw bytes: the text when valid UTF-8, else `{ base64: "…" }` so nothing is lost. */
export function toHeaderValue(buf: Buffer): HeaderValue {
  return isUtf8(buf) ? buf.toString('utf8') : { base64: buf.toString('base64') };
}

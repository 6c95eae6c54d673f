import { isUtf8 } from 'node:buffer';
import type { HeaderValue, MessageBody } from '../../../shared/domain';

/** Default body limit (bytes) when `PeekOptions.maxBodyBytes` is absent: 1 MiB + 1 KiB. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024 + 1024;

/**
 * Turns raw bytes read from Redis into a {@link MessageBody}: `utf8` text when the bytes are
 * valid UTF-8, else `base64`. Bodies longer than `maxBytes` are cut (at a character boundary
 * for text) with `truncated: true`; `sizeBytes` is always the full size.
 *
 * @param fullSize the body's full size in bytes when `buf` is already a prefix cut by the server
 *   (then only the prefix is checked for UTF-8, allowing a character split at its end).
 */
export function toMessageBody(buf: Buffer | null | undefined, maxBytes: number, fullSize?: number): MessageBody {
  const size = Math.max(fullSize ?? 0, buf?.length ?? 0);
  if (!buf || size === 0) return { encoding: 'utf8', data: '', sizeBytes: size, truncated: size > 0 };
  const truncated = size > maxBytes || size > buf.length;
  let slice = buf.length > maxBytes ? buf.subarray(0, Math.max(0, maxBytes)) : buf;
  // With all bytes at hand, the whole body decides text vs binary; a body the server already cut
  // is judged on its prefix.
  const haveAll = buf.length >= size;
  const text = haveAll ? (isUtf8(buf) ? (truncated ? utf8Prefix(slice) : slice) : null) : utf8Prefix(slice);
  if (text) {
    slice = text;
    return { encoding: 'utf8', data: slice.toString('utf8'), sizeBytes: size, truncated };
  }
  return { encoding: 'base64', data: slice.toString('base64'), sizeBytes: size, truncated };
}

/** The longest prefix of `b` that is valid UTF-8 once a character split at the very end is dropped (≤ 3 bytes), or null. */
function utf8Prefix(b: Buffer): Buffer | null {
  for (let end = b.length; end >= Math.max(0, b.length - 3); end--) {
    const s = b.subarray(0, end);
    if (isUtf8(s)) return s;
  }
  return null;
}

/** A header value from raw bytes: the text when valid UTF-8, else `{ base64: "…" }` so nothing is lost. */
export function toHeaderValue(buf: Buffer): HeaderValue {
  return isUtf8(buf) ? buf.toString('utf8') : { base64: buf.toString('base64') };
}

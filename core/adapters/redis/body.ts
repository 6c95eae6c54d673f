import { isUtf8 } from 'node:buffer';
import type { HeaderValue, MessageBody } from '../../../shared/domain';

/** Default body limit (bytes) when `PeekOptions.maxBodyBytes` is absent: 1 MiB + 1 KiB. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024 + 1024;

/**
 * Turns raw bytes read from Redis into a {@link MessageBody}: `utf8` text when the bytes are
 * valid UTF-8, else `base64`. Bodies longer than `maxBytes` are cut (at a character boundary
 * for text) with `truncated: true`; `sizeBytes` is always the full size.
 */
export function toMessageBody(buf: Buffer | null | undefined, maxBytes: number): MessageBody {
  if (!buf || buf.length === 0) return { encoding: 'utf8', data: '', sizeBytes: 0, truncated: false };
  const size = buf.length;
  const truncated = size > maxBytes;
  let slice = truncated ? buf.subarray(0, Math.max(0, maxBytes)) : buf;
  if (isUtf8(buf)) {
    if (truncated) {
      // The whole body is valid UTF-8, so one of the last 4 cut points is a character boundary.
      for (let end = slice.length; end >= Math.max(0, slice.length - 3); end--) {
        const s = slice.subarray(0, end);
        if (isUtf8(s)) {
          slice = s;
          break;
        }
      }
    }
    return { encoding: 'utf8', data: slice.toString('utf8'), sizeBytes: size, truncated };
  }
  return { encoding: 'base64', data: slice.toString('base64'), sizeBytes: size, truncated };
}

/** A header value from raw bytes: the text when valid UTF-8, else `{ base64: "…" }` so nothing is lost. */
export function toHeaderValue(buf: Buffer): HeaderValue {
  return isUtf8(buf) ? buf.toString('utf8') : { base64: buf.toString('base64') };
}

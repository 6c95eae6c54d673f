import { isUtf8 } from 'node:buffer';
import type { MessageBody } from '../../../shared/domain';

/** Default body limit (bytes) when `PeekOptions.maxBodyBytes` is absent: 1 MiB + 1 KiB. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024 + 1024;

/**
 * Turns a message body into a {@link MessageBody}: `utf8` text when the bytes are valid UTF-8,
 * else `base64` of the raw bytes, so binary bodies survive exactly. Bodies longer than
 * `maxBytes` are cut (at a character boundary for text) with `truncated: true`; `sizeBytes` is
 * always the full size in bytes.
 */
export function toMessageBody(buf: Uint8Array, maxBytes: number): MessageBody {
  const b = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  const size = b.length;
  if (size === 0) return { encoding: 'utf8', data: '', sizeBytes: 0, truncated: false };
  const truncated = size > maxBytes;
  let slice = truncated ? b.subarray(0, Math.max(0, maxBytes)) : b;
  if (isUtf8(b)) {
    if (truncated) {
      // The whole body is valid UTF-8, so one of the last four cut points is a character boundary.
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

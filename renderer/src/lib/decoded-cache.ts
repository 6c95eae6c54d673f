import { decodeBody, type DecodedBody } from '../../../shared/body/decode';
import type { QueueMessage } from '../../../shared/domain/message';

const cache = new WeakMap<QueueMessage, DecodedBody>();

/** `decodeBody` of a message's body, computed once per message object (list previews and the viewer share it). */
export function decodedOf(m: QueueMessage): DecodedBody {
  let d = cache.get(m);
  if (d === undefined) {
    d = decodeBody(m.body);
    cache.set(m, d);
  }
  return d;
}

import { connect, type ChannelModel, type ConfirmChannel } from 'amqplib';
import { AMQP_URL, RABBITMQ_MANAGEMENT_URL } from './env';

// Native RabbitMQ fixtures for the integration tests: amqplib directly, so the adapter is never
// its own witness. One shared connection per test file (each file imports its own module instance).
let conn: Promise<ChannelModel> | null = null;

export function nativeConnection(): Promise<ChannelModel> {
  // Reconnects after the broker closed the connection, so cleanup still works after a failure.
  if (conn === null) {
    const p = connect(AMQP_URL, { noDelay: true }).then((c) => {
      c.on('error', () => undefined);
      c.on('close', () => {
        if (conn === p) conn = null;
      });
      return c;
    });
    conn = p;
  }
  return conn;
}

/** A fresh confirm channel (closed by the caller, or by a failing passive declare). */
export async function nativeChannel(): Promise<ConfirmChannel> {
  const c = await nativeConnection();
  const ch = await c.createConfirmChannel();
  ch.on('error', () => undefined);
  return ch;
}

export async function closeNative(): Promise<void> {
  const p = conn;
  conn = null;
  if (p) await (await p).close().catch(() => undefined);
}

/** Ready messages of a classic/quorum queue, via passive queue.declare (immediate). */
export async function nativeCount(name: string): Promise<number> {
  const ch = await nativeChannel();
  try {
    return (await ch.checkQueue(name)).messageCount;
  } finally {
    await ch.close().catch(() => undefined);
  }
}

/** Takes (acknowledges) every ready message of `queue`, as a consumer processing them would; their bodies as UTF-8 text, in order. */
export async function nativeTakeAll(queue: string): Promise<string[]> {
  const ch = await nativeChannel();
  const out: string[] = [];
  try {
    for (;;) {
      const m = await ch.get(queue, { noAck: true });
      if (m === false) return out;
      out.push(m.content.toString());
    }
  } finally {
    await ch.close().catch(() => undefined);
  }
}

export async function nativeDeleteQueue(name: string): Promise<void> {
  const ch = await nativeChannel();
  await ch.deleteQueue(name).catch(() => undefined);
  await ch.close().catch(() => undefined);
}

const MGMT_AUTH = `Basic ${Buffer.from('guest:guest').toString('base64')}`;

/**
 * A request to the shared broker's management HTTP API (RABBITMQ_MANAGEMENT_URL, as guest), e.g.
 * `nativeMgmt('PUT', '/api/policies/%2F/p', { pattern, definition })`; `body` is sent as JSON.
 * The response is returned whatever its status (the caller checks it).
 */
export function nativeMgmt(method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${RABBITMQ_MANAGEMENT_URL}${path}`, { method, headers: { authorization: MGMT_AUTH, 'content-type': 'application/json' }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
}

import type { Channel, Message } from 'amqplib';
import { channelError } from './errors';

/** Wait (ms) for the first delivery of a batch before calling the queue empty. */
const FIRST_DELIVERY_MS = 1_000;
/** With no further delivery for this long (ms), a batch is complete with what arrived. */
const IDLE_MS = 300;

/**
 * Reads a classic or quorum DLQ in batches with manual acknowledgements
 * (https://www.rabbitmq.com/docs/confirms#acknowledgement-modes): for each batch, `basic.qos(n)`
 * (per consumer, https://www.rabbitmq.com/docs/consumer-prefetch; sent only when `n` changes, as it
 * applies to every consumer started later on the channel) and a fresh consumer, which
 * therefore receives at most `n` messages; the consumer is cancelled as soon as `n` arrived (or
 * nothing more arrives), so the broker never delivers more than the run will examine, and messages
 * held from earlier batches (unacked on the same channel) do not count against the next batch.
 * Deliveries stay unacknowledged: the caller acks, nacks or keeps them.
 */
export class DlqReader {
  private failure: Error | null = null;
  private closed = false;
  /** The `basic.qos` prefetch last set on the channel (it applies to consumers started later), or null. */
  private prefetchSet: number | null = null;

  /**
   * @param useGet read with basic.get instead of a consumer: a single-active-consumer queue
   *   delivers only to its active consumer, which may be someone else's (slower: one round trip
   *   per message).
   */
  constructor(
    readonly ch: Channel,
    private readonly queue: string,
    private readonly vhost: string,
    private readonly useGet = false,
  ) {
    ch.on('error', (e: Error) => {
      this.failure = e;
    });
    ch.on('close', () => {
      this.closed = true;
    });
  }

  /** Whether the channel is still open (acks are only possible then). A method: it changes under callbacks. */
  isOpen(): boolean {
    return !this.closed;
  }

  /** Why the channel closed, as a QueuescopeError (or a generic lost-connection one). */
  error(): Error {
    return channelError(this.failure ?? new Error('Channel ended: the connection to RabbitMQ was lost'), this.queue, this.vhost);
  }

  /**
   * Reads up to `n` messages (1–1000) from the head. Returns fewer when the queue has no more
   * ready messages (none within 1 s, or a pause of 300 ms after the last one).
   * @throws QueuescopeError when the channel fails (QUEUE_NOT_FOUND, HOST_UNREACHABLE…).
   */
  async read(n: number): Promise<Message[]> {
    if (this.closed) throw this.error();
    if (this.useGet) return this.readByGet(n);
    const got: Message[] = [];
    let finish: () => void = () => undefined;
    const done = new Promise<void>((r) => {
      finish = r;
    });
    let timer: NodeJS.Timeout | undefined;
    // One timer per pause instead of one per delivery: when it fires early (deliveries came since
    // it was set), it is set again for what is left of the pause after the last delivery.
    let lastAt = 0;
    let idleFrom = 0;
    const check = (): void => {
      const left = idleFrom + IDLE_MS - performance.now();
      if (lastAt > 0 && left > 1) timer = setTimeout(check, left);
      else finish();
    };
    const arm = (ms: number): void => {
      clearTimeout(timer);
      timer = setTimeout(ms === IDLE_MS ? check : finish, ms);
    };
    const onClose = (): void => finish();
    this.ch.once('close', onClose);
    try {
      // The per-consumer limit stays set for later consumers: one round trip less per batch.
      if (this.prefetchSet !== n) {
        this.prefetchSet = null;
        await this.ch.prefetch(n);
        this.prefetchSet = n;
      }
      const ok = await this.ch.consume(
        this.queue,
        (m) => {
          if (m === null) return finish(); // cancelled by the broker (queue deleted)
          got.push(m);
          if (got.length >= n) return finish();
          idleFrom = performance.now();
          if (lastAt === 0) arm(IDLE_MS);
          lastAt = idleFrom;
        },
        { noAck: false },
      );
      if (got.length < n) arm(got.length === 0 ? FIRST_DELIVERY_MS : IDLE_MS);
      await done;
      clearTimeout(timer);
      // Deliveries that arrive before cancel-ok are ours too (still at most n: the prefetch).
      if (this.isOpen()) await this.ch.cancel(ok.consumerTag);
    } catch (e) {
      clearTimeout(timer);
      this.ch.off('close', onClose);
      if (got.length === 0) throw channelError(e, this.queue, this.vhost);
      // Messages already delivered are in hand; the caller finds the channel closed when acking.
      return got;
    }
    this.ch.off('close', onClose);
    if (!this.isOpen() && got.length === 0) throw this.error();
    return got;
  }

  private async readByGet(n: number): Promise<Message[]> {
    const got: Message[] = [];
    try {
      while (got.length < n) {
        const m = await this.ch.get(this.queue, { noAck: false });
        if (m === false) break;
        got.push(m);
      }
    } catch (e) {
      if (got.length === 0) throw channelError(e, this.queue, this.vhost);
    }
    return got;
  }
}

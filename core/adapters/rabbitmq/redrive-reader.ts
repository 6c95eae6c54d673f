import type { Channel, Message } from 'amqplib';
import { channelError } from './errors';

/**
 * Wait (ms) for the first delivery of a batch before asking the broker whether the queue is empty
 * (`queue.declare` passive: its ready-message count).
 */
const FIRST_DELIVERY_MS = 1_000;
/**
 * Longest wait (ms) for the first delivery of a batch while the broker still counts ready
 * messages: a loaded broker (paging persistent messages from disk, two busy cores) can take more
 * than {@link FIRST_DELIVERY_MS} to deliver, and calling the queue empty then ended a redrive of
 * 10,000 messages after ~4,000 as if it were done (CI under load). After this, the batch is empty
 * even though messages are counted (someone else's consumer is taking them).
 */
const MAX_FIRST_DELIVERY_MS = 30_000;
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
   * ready messages: a pause of 300 ms after the last delivery, or none within 1 s and the broker
   * counts no ready message (while it does, up to 30 s: a loaded broker can be slow to deliver).
   * @throws QueuescopeError when the channel fails (QUEUE_NOT_FOUND, HOST_UNREACHABLE…).
   */
  async read(n: number): Promise<Message[]> {
    if (this.closed) throw this.error();
    if (this.useGet) return this.readByGet(n);
    const started = performance.now();
    const got: Message[] = [];
    // Set by the consumer callback (read through a function, so the compiler does not narrow it).
    const st = { cancelledByBroker: false };
    const cancelled = (): boolean => st.cancelledByBroker;
    let finish: () => void = () => undefined;
    let done: Promise<void> = Promise.resolve();
    const reset = (): void => {
      done = new Promise<void>((r) => {
        finish = r;
      });
    };
    reset();
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
      timer = setTimeout(ms === IDLE_MS ? check : () => finish(), ms);
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
          if (m === null) {
            st.cancelledByBroker = true; // the queue was deleted
            return finish();
          }
          got.push(m);
          if (got.length >= n) return finish();
          idleFrom = performance.now();
          if (lastAt === 0) arm(IDLE_MS);
          lastAt = idleFrom;
        },
        { noAck: false },
      );
      for (;;) {
        if (got.length >= n || cancelled() || !this.isOpen()) break;
        arm(got.length === 0 ? FIRST_DELIVERY_MS : IDLE_MS);
        await done;
        clearTimeout(timer);
        if (got.length > 0 || cancelled() || !this.isOpen() || performance.now() - started >= MAX_FIRST_DELIVERY_MS) break;
        // Nothing arrived: the queue is empty, unless the broker still counts ready messages it is
        // slow to deliver (then wait on; deliveries during this round trip are kept).
        const ready = await this.ch.checkQueue(this.queue).then(
          (q) => q.messageCount,
          () => 0,
        );
        if (ready === 0) break;
        reset();
      }
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

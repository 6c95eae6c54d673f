import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

/**
 * A Lua script run with EVALSHA, falling back to EVAL once when the server does not know it yet
 * (NOSCRIPT: a new or restarted server), as https://redis.io/docs/latest/commands/evalsha/ describes.
 */
export class LuaScript {
  readonly sha: string;
  constructor(readonly source: string) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  /** Runs the script with `keys` and `args`; the reply as ioredis returns it (strings, numbers, arrays). */
  async run(client: Redis, keys: string[], args: (string | Buffer)[]): Promise<unknown> {
    try {
      return await client.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (e) {
      if (!(e instanceof Error) || !e.message.startsWith('NOSCRIPT')) throw e;
      return client.eval(this.source, keys.length, ...keys, ...args);
    }
  }
}

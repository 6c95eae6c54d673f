import { describe, expect, it } from 'vitest';
import { QueuescopeError, type OperationStatus } from '../../shared/domain';
import { MAX_OPERATION_ERRORS, OperationManager, canTransition, isTerminal } from './operations';

const ALL: OperationStatus[] = ['pending', 'running', 'paused', 'completed', 'failed', 'cancelled'];

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

async function until(cond: () => boolean, ms = 2000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('operation state machine', () => {
  it('terminal states cannot be left', () => {
    for (const from of ALL.filter(isTerminal)) for (const to of ALL) expect(canTransition(from, to), `${from} → ${to}`).toBe(false);
  });

  it('allows exactly the documented transitions', () => {
    const allowed = ALL.flatMap((f) => ALL.filter((t) => canTransition(f, t)).map((t) => `${f}>${t}`)).sort();
    expect(allowed).toEqual(
      [
        'pending>running',
        'pending>cancelled',
        'pending>failed',
        'running>paused',
        'running>completed',
        'running>failed',
        'running>cancelled',
        'paused>running',
        'paused>cancelled',
        'paused>failed',
      ].sort(),
    );
  });
});

describe('OperationManager', () => {
  it('runs to completed with the result and counts', async () => {
    const m = new OperationManager();
    const s0 = m.start('export', 'test', async (ctx) => {
      ctx.setTotal(3);
      for (let i = 1; i <= 3; i++) {
        await ctx.checkpoint();
        ctx.report({ processed: i });
      }
      return { path: '/tmp/x.jsonl' };
    });
    expect(s0.status).toBe('pending');
    const s = await m.wait(s0.id);
    expect(s.status).toBe('completed');
    expect(s.processed).toBe(3);
    expect(s.total).toBe(3);
    expect(s.result).toEqual({ path: '/tmp/x.jsonl' });
    expect(s.startedAt).not.toBeNull();
    expect(s.finishedAt).toBeGreaterThanOrEqual(s.startedAt!);
    expect(m.list().map((x) => x.id)).toContain(s0.id);
  });

  it('a failing run is failed with the error, credentials stripped', async () => {
    const m = new OperationManager();
    const { id } = m.start('export', 't', () => Promise.reject(new Error('connect amqp://bob:hunter2@h:5672 refused')));
    const s = await m.wait(id);
    expect(s.status).toBe('failed');
    expect(s.errors.at(-1)?.message).toContain('bob:***@');
    expect(JSON.stringify(s)).not.toContain('hunter2');
  });

  it('cancel of a running op aborts its signal and ends cancelled; cancel after finish is a no-op', async () => {
    const m = new OperationManager();
    let sawAbort = false;
    const { id } = m.start('export', 't', async (ctx) => {
      await new Promise<void>((res) => ctx.signal.addEventListener('abort', () => res(), { once: true }));
      sawAbort = true;
      await ctx.checkpoint(); // throws CANCELLED
      return {};
    });
    await until(() => m.get(id).status === 'running');
    m.cancel(id);
    const s = await m.wait(id);
    expect(sawAbort).toBe(true);
    expect(s.status).toBe('cancelled');
    const again = m.cancel(id);
    expect(again.status).toBe('cancelled');
    expect(again.finishedAt).toBe(s.finishedAt);
  });

  it('cancel of a completed op is a no-op (stays completed)', async () => {
    const m = new OperationManager();
    const { id } = m.start('export', 't', () => Promise.resolve({ ok: true }));
    await m.wait(id);
    expect(m.cancel(id).status).toBe('completed');
    expect(m.get(id).status).toBe('completed');
  });

  it('cancel while pending never runs the work', async () => {
    const m = new OperationManager();
    let ran = false;
    const { id } = m.start('export', 't', () => {
      ran = true;
      return Promise.resolve({});
    });
    expect(m.cancel(id).status).toBe('cancelled');
    await m.wait(id);
    expect(ran).toBe(false);
    expect(m.get(id).status).toBe('cancelled');
  });

  it('pause waits at the next checkpoint; resume continues; cancel while paused ends cancelled', async () => {
    const m = new OperationManager();
    let batches = 0;
    const gate = deferred();
    const { id } = m.start('export', 't', async (ctx) => {
      for (;;) {
        await ctx.checkpoint();
        batches++;
        if (batches === 1) await gate.promise;
        if (batches >= 5) return { batches };
      }
    });
    await until(() => batches === 1);
    expect(m.pause(id).status).toBe('paused');
    gate.resolve();
    await new Promise((r) => setTimeout(r, 50));
    expect(batches).toBe(1); // held at the checkpoint
    expect(m.resume(id).status).toBe('running');
    const s = await m.wait(id);
    expect(s.status).toBe('completed');
    expect(s.result).toEqual({ batches: 5 });

    const m2 = new OperationManager();
    const g2 = deferred();
    const op2 = m2.start('export', 't', async (ctx) => {
      await ctx.checkpoint();
      await g2.promise;
      await ctx.checkpoint();
      return {};
    });
    await until(() => m2.get(op2.id).status === 'running');
    m2.pause(op2.id);
    g2.resolve();
    await new Promise((r) => setTimeout(r, 20));
    expect(m2.get(op2.id).status).toBe('paused');
    m2.cancel(op2.id);
    expect((await m2.wait(op2.id)).status).toBe('cancelled');
    // pause/resume of a finished op are no-ops
    expect(m2.resume(op2.id).status).toBe('cancelled');
    expect(m2.pause(op2.id).status).toBe('cancelled');
  });

  it('cancelAll cancels every unfinished operation and leaves finished ones alone', async () => {
    const m = new OperationManager();
    const done = m.start('export', 'done', () => Promise.resolve({}));
    await m.wait(done.id);
    const a = m.start('export', 'a', (ctx) => new Promise((_res, rej) => ctx.signal.addEventListener('abort', () => rej(new QueuescopeError('CANCELLED', 'x')))));
    const b = m.start('export', 'b', (ctx) => new Promise((_res, rej) => ctx.signal.addEventListener('abort', () => rej(new QueuescopeError('CANCELLED', 'x')))));
    await until(() => m.get(a.id).status === 'running' && m.get(b.id).status === 'running');
    m.cancelAll();
    expect((await m.wait(a.id)).status).toBe('cancelled');
    expect((await m.wait(b.id)).status).toBe('cancelled');
    expect(m.get(done.id).status).toBe('completed');
  });

  it('keeps only the last 20 errors, newest last', async () => {
    const m = new OperationManager();
    const { id } = m.start('export', 't', (ctx) => {
      for (let i = 0; i < 30; i++) ctx.addError(new QueuescopeError('BROKER_ERROR', `e${i}`));
      return Promise.resolve({});
    });
    const s = await m.wait(id);
    expect(s.errors).toHaveLength(MAX_OPERATION_ERRORS);
    expect(s.errors[0]?.message).toBe('e10');
    expect(s.errors.at(-1)?.message).toBe('e29');
  });

  it('publishes at most 4 snapshots per second while running, with rate and ETA', async () => {
    const m = new OperationManager();
    const published: { t: number; status: string; processed: number; rate: number | null; etaMs: number | null }[] = [];
    m.subscribe((s) => published.push({ t: Date.now(), status: s.status, processed: s.processed, rate: s.rate, etaMs: s.etaMs }));
    const { id } = m.start('export', 't', async (ctx) => {
      ctx.setTotal(10_000_000);
      // 1.6 s: a running rate needs 1 s of samples (MIN_RATE_SPAN_MS), and timers drift under load.
      const end = Date.now() + 1600;
      let n = 0;
      while (Date.now() < end) {
        n += 100;
        ctx.report({ processed: n });
        await new Promise((r) => setTimeout(r, 1));
      }
      return { n };
    });
    const s = await m.wait(id);
    const running = published.filter((p) => p.status === 'running');
    // 1.6 s of reports every ~1 ms: unthrottled this would be ~1500 snapshots.
    expect(running.length).toBeLessThanOrEqual(Math.ceil(1.6 * 4) + 2);
    for (let i = 1; i < running.length; i++) expect(running[i]!.t - running[i - 1]!.t).toBeGreaterThanOrEqual(240);
    const withRate = running.filter((p) => p.rate !== null && p.rate > 0);
    expect(withRate.length).toBeGreaterThan(0);
    // none in the first second (a burst over a few hundred ms is not a rate)
    const t0 = running[0]!.t;
    expect(running.filter((p) => p.t - t0 < 900 && p.rate !== null)).toEqual([]);
    expect(withRate.at(-1)!.etaMs).toBeGreaterThan(0);
    expect(s.status).toBe('completed');
    expect(s.rate).toBeGreaterThan(0);
  });

  it('get of an unknown id is INVALID_INPUT', () => {
    const m = new OperationManager();
    expect(() => m.get('nope')).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }));
  });
});

import { describe, expect, it } from 'vitest';
import { DUPLICATE_SIGINT_MS, exitCodeForSignal, interruptHandler } from './interrupts';

describe('interruptHandler', () => {
  function setup(): { fire: (atMs: number) => void; calls: string[] } {
    const calls: string[] = [];
    let clock = 0;
    const h = interruptHandler({ onStop: () => calls.push('stop'), onQuit: () => calls.push('quit'), now: () => clock });
    return {
      calls,
      fire: (atMs) => {
        clock = atMs;
        h();
      },
    };
  }

  it('stops on the first Ctrl+C and takes a copy of it (npx forwards SIGINT) as the same press', () => {
    const { fire, calls } = setup();
    fire(1000);
    fire(1000 + 5);
    fire(1000 + DUPLICATE_SIGINT_MS - 1);
    expect(calls).toEqual(['stop']);
  });

  it('quits at once on a second press after the window, and on every later one', () => {
    const { fire, calls } = setup();
    fire(0);
    fire(DUPLICATE_SIGINT_MS);
    fire(DUPLICATE_SIGINT_MS + 2000);
    expect(calls).toEqual(['stop', 'quit', 'quit']);
  });

  it('SIGTERM and SIGHUP stop as Ctrl+C does, and a second signal of any of them quits, each named', () => {
    const calls: string[] = [];
    let clock = 0;
    const h = interruptHandler({ onStop: (s) => calls.push(`stop ${s}`), onQuit: (s) => calls.push(`quit ${s}`), now: () => clock });
    h('SIGTERM');
    clock = 10;
    h('SIGHUP'); // within the window: the same stop (a closed terminal can send it twice)
    clock = DUPLICATE_SIGINT_MS + 1;
    h('SIGINT');
    clock += 1000;
    h('SIGHUP');
    expect(calls).toEqual(['stop SIGTERM', 'quit SIGINT', 'quit SIGHUP']);
    expect([exitCodeForSignal('SIGINT'), exitCodeForSignal('SIGTERM'), exitCodeForSignal('SIGHUP')]).toEqual([130, 143, 129]);
  });
});

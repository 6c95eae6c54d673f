import { describe, expect, it } from 'vitest';
import { DEFAULT_PREFERENCES, migratePreferences } from './ui';

describe('migratePreferences', () => {
  it('converts v1 (interval in seconds) to v2 (ms) and keeps known values', () => {
    expect(migratePreferences({ preferences: { autoRefresh: true, refreshSeconds: 30, peekLimit: 100 } }, 1).preferences).toEqual({
      ...DEFAULT_PREFERENCES,
      autoRefresh: true,
      refreshIntervalMs: 30_000,
      peekLimit: 100,
    });
  });

  it('keeps a valid v2 state as is', () => {
    const v2 = { autoRefresh: true, refreshIntervalMs: 5000, peekLimit: 20, peekDirection: 'newest', bodyTab: 'hex' } as const;
    expect(migratePreferences({ preferences: v2 }, 2).preferences).toEqual(v2);
  });

  it('falls back to defaults for garbage, out-of-range and wrong-typed values', () => {
    for (const junk of [null, 42, 'x', [], { preferences: 'nope' }, { preferences: { refreshIntervalMs: 7, peekLimit: 1e9, bodyTab: '<script>', autoRefresh: 'yes' } }]) {
      expect(migratePreferences(junk, 2).preferences).toEqual(DEFAULT_PREFERENCES);
    }
  });
});

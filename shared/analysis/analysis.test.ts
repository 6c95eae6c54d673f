import { describe, expect, it } from 'vitest';
import { analyzeMessage } from './index';
import { CORPUS } from './fixtures/corpus';

describe('labelled corpus: key, key verdict, message verdict and reasons', () => {
  for (const f of CORPUS) {
    it(f.label, () => {
      const a = analyzeMessage(f.message, f.options);
      const all = a.reasons.join(' | ');
      expect({ key: a.key?.key ?? null, keyVerdict: a.keyVerdict.verdict, verdict: a.verdict }).toEqual({ key: f.key, keyVerdict: f.keyVerdict, verdict: f.verdict });
      if (f.keySource !== undefined) expect(a.key?.source).toBe(f.keySource);
      if (f.label2 !== undefined) expect(a.payload.label).toBe(f.label2);
      if (f.envelope !== undefined) expect(a.payload.envelope).toBe(f.envelope);
      if (f.operation !== undefined) expect(a.operation).toBe(f.operation);
      for (const r of f.reasons) expect(all).toContain(r);
      for (const r of f.notReasons ?? []) expect(all).not.toContain(r);
      for (const r of f.keyReasons ?? []) expect(a.keyVerdict.reason).toContain(r);
      expect(a.keyVerdict.reason.startsWith(`${a.keyVerdict.verdict}:`)).toBe(true);
    });
  }
});

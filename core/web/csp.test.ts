import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RENDERER_CSP, RENDERER_CSP_META } from '../../shared/security/csp';

describe('renderer CSP', () => {
  it('index.html carries the same policy as the headers (minus frame-ancestors)', () => {
    const html = readFileSync(join(__dirname, '../../renderer/index.html'), 'utf8');
    const m = /http-equiv="Content-Security-Policy"\s+content="([^"]+)"/.exec(html);
    expect(m?.[1]?.replace(/\s+/g, ' ').trim()).toBe(RENDERER_CSP_META);
  });
  it('forbids inline scripts, eval and remote content', () => {
    expect(RENDERER_CSP).toContain("script-src 'self'");
    expect(RENDERER_CSP).not.toMatch(/unsafe-eval|script-src[^;]*unsafe-inline|https?:/);
    expect(RENDERER_CSP).toContain("frame-ancestors 'none'");
  });
});

/**
 * The renderer's Content-Security-Policy, one definition for every place that sends it:
 * the Electron session's response headers (electron/main/window.ts), the browser bridge
 * (core/web/server.ts), and — as a meta tag, which browsers read without `frame-ancestors` —
 * renderer/index.html (kept equal by csp.test.ts).
 *
 * Scripts only from our own bundle; no inline scripts, no eval, no remote content, no plugins.
 * `style-src 'unsafe-inline'` is needed for React's style attributes (virtualized rows).
 */
export const RENDERER_CSP_DIRECTIVES = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
] as const;

/** The policy as a header value. */
export const RENDERER_CSP = RENDERER_CSP_DIRECTIVES.join('; ');

/** The policy for a `<meta http-equiv>` tag: the same, without `frame-ancestors` (ignored in meta tags). */
export const RENDERER_CSP_META = RENDERER_CSP_DIRECTIVES.filter((d) => !d.startsWith('frame-ancestors')).join('; ');

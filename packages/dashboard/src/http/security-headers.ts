import type { ServerResponse } from 'node:http';

/**
 * The Content-Security-Policy of every response. Scripts, styles and images come from the
 * dashboard's own asset route only: no inline script or style (the page script is a file, charts
 * are SVG elements with attributes), nothing from another origin, no framing, forms post only to
 * the dashboard. A payload that slipped past escaping still could not run.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

/** Headers every dashboard response carries, set before anything is written. */
export function setSecurityHeaders(res: ServerResponse): void {
  res.setHeader('Content-Security-Policy', CONTENT_SECURITY_POLICY);
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
  res.setHeader('Cross-Origin-Resource-Policy', 'same-origin');
}

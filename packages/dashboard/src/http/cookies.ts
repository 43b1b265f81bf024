import type { IncomingMessage, ServerResponse } from 'node:http';

/** The value of cookie `name` on the request, if any. */
export function readCookie(req: IncomingMessage, name: string): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** Whether the browser reached us over TLS (directly, or through a proxy that says so). */
export function isHttps(req: IncomingMessage): boolean {
  return Boolean((req.socket as { encrypted?: boolean }).encrypted) || req.headers['x-forwarded-proto'] === 'https';
}

/**
 * Adds a `Set-Cookie` (keeping those the host application set already). Dashboard cookies are
 * HttpOnly, SameSite=Strict and scoped to the dashboard's path.
 */
export function setCookie(req: IncomingMessage, res: ServerResponse, name: string, value: string, options: { path: string; maxAgeSeconds?: number }): void {
  let cookie = `${name}=${value}; Path=${options.path}; HttpOnly; SameSite=Strict`;
  if (options.maxAgeSeconds !== undefined) cookie += `; Max-Age=${options.maxAgeSeconds}`;
  if (isHttps(req)) cookie += '; Secure';
  const existing = res.getHeader('Set-Cookie');
  const list = existing === undefined ? [] : Array.isArray(existing) ? existing : [String(existing)];
  res.setHeader('Set-Cookie', [...list, cookie]);
}

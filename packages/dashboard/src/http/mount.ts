import type { IncomingMessage } from 'node:http';

/** A request as seen from the dashboard's mount point. */
export interface Located {
  /** The mount path links are built under (`''` at the root). */
  base: string;
  /** The path below it, starting with `/`. */
  path: string;
  query: URLSearchParams;
}

type FrameworkRequest = IncomingMessage & { originalUrl?: string; baseUrl?: string };

/**
 * Where a request points below the dashboard's base path, in any host:
 * - `node:http`: `req.url` is the full path (`/loom/jobs`);
 * - Express and NestJS (`app.use('/loom', handler)`) strip the mount from `req.url` and keep the
 *   full one in `req.originalUrl` and the mount in `req.baseUrl`;
 * - Fastify with `@fastify/middie` strips it likewise and keeps `req.originalUrl`.
 * Undefined when the request is not under the base path (the handler then calls `next`, or 404s).
 */
export function locate(req: FrameworkRequest, basePath: string | undefined): Located | undefined {
  if (basePath === undefined) {
    const url = new URL(req.url ?? '/', 'http://dashboard.invalid');
    const base = (req.baseUrl ?? '').replace(/\/+$/, '');
    return { base, path: url.pathname || '/', query: url.searchParams };
  }
  const url = new URL(req.originalUrl ?? req.url ?? '/', 'http://dashboard.invalid');
  const { pathname } = url;
  if (basePath === '') return { base: '', path: pathname, query: url.searchParams };
  if (pathname === basePath) return { base: basePath, path: '/', query: url.searchParams };
  if (!pathname.startsWith(`${basePath}/`)) return undefined;
  return { base: basePath, path: pathname.slice(basePath.length), query: url.searchParams };
}

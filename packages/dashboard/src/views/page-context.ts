import type { Flash } from '../http/flash.js';

/** What every page is rendered with. */
export interface PageContext {
  /** Where the dashboard is mounted: `''` at the root, else like `/loom`. */
  base: string;
  /** This browser's CSRF token, put in every form. */
  csrf: string;
  /** Whether `authorize` allowed actions for this request (no `authorize`: never). */
  canAct: boolean;
  flash?: Flash;
  now: Date;
  /** The dashboard's title (option `title`). */
  title: string;
  /** Changes with the assets' content, so browsers never keep an old script. */
  assetVersion: string;
  /** This page's path and query below the base (actions on a list come back to it). */
  here: string;
}

/** Which navigation entry a page belongs to. */
export type Section = 'queues' | 'jobs' | 'dead' | 'schedules' | 'flow' | 'workers';

type QueryValue = string | readonly string[] | undefined;

/**
 * A URL inside the dashboard. Path segments a caller passes in `path` must already be encoded
 * ({@link jobPath} does that for ids); query values are encoded here. Every URL starts with the
 * base path, so no value can turn it into another scheme or host.
 */
export function href(ctx: Pick<PageContext, 'base'>, path: string, query: Record<string, QueryValue> = {}): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined) continue;
    for (const v of typeof value === 'string' ? [value] : value) if (v !== '') params.append(key, v);
  }
  const search = params.toString();
  return `${ctx.base}${path}${search ? `?${search}` : ''}`;
}

/** `/jobs/<id>`, the id encoded as one path segment. */
export function jobPath(id: string): string {
  return `/jobs/${encodeURIComponent(id)}`;
}

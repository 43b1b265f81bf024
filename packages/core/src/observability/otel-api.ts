import type * as OtelApiModule from '@opentelemetry/api';
import type { Logger } from '../support/logger.js';

/** The `@opentelemetry/api` module. Its types are used inside this folder only, never in Loom's public API. */
export type OtelApi = typeof OtelApiModule;

let loading: Promise<OtelApi | undefined> | undefined;

/**
 * `@opentelemetry/api` when the application has it installed (it is an optional peer dependency
 * of `@loom/core`), else undefined: the engine then runs without telemetry and without ever
 * loading it. Loaded once per process. Any failure other than "not installed" is logged, and the
 * engine runs without telemetry rather than refusing to start.
 */
export function loadOtelApi(logger: Logger): Promise<OtelApi | undefined> {
  return (loading ??= import('@opentelemetry/api').then(
    // Node gives the CommonJS build's exports as named exports; other loaders may give only `default`.
    (mod: unknown) => ((mod as Partial<OtelApi>).trace ? mod : (mod as { default: unknown }).default) as OtelApi,
    (err: unknown) => {
      if (!isModuleNotFound(err)) {
        logger.warn({ err }, 'Could not load @opentelemetry/api; Loom runs without traces and metrics. Check that its installed version works with this Node');
      }
      return undefined;
    },
  ));
}

function isModuleNotFound(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND';
}

import type { JobStore } from '../store/store.js';
import type { Clock } from '../support/clock.js';
import type { Logger } from '../support/logger.js';
import { loadOtelApi } from './otel-api.js';
import { OtelTelemetry } from './otel-telemetry.js';
import { NOOP_TELEMETRY, type Telemetry } from './telemetry.js';

/** The engine's telemetry: OpenTelemetry when `@opentelemetry/api` is installed, else a no-op. */
export async function createTelemetry(deps: { store: JobStore; clock: Clock; logger: Logger }): Promise<Telemetry> {
  const api = await loadOtelApi(deps.logger);
  return api ? new OtelTelemetry(api, deps) : NOOP_TELEMETRY;
}

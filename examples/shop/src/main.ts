/**
 * `npm start`: the shop on a MongoDB found with no setup, a short burst of demo orders with a live
 * progress line, then the HTTP API until Ctrl-C (a graceful stop).
 */
import 'reflect-metadata';
import { startConfig } from './config.js';
import { runDemoBurst } from './demo/run-burst.js';
import { LiveConsole } from './demo/live-console.js';
import { CompactLogger } from './infra/compact-logger.js';
import { openShopDatabase } from './infra/database.js';
import { stopOnSignals } from './infra/stop-on-signals.js';
import { startTelemetry } from './infra/telemetry.js';
import { ShopApp } from './shop-app.js';

const out = new LiveConsole();
const logger = new CompactLogger(out.print);
// Before the engine is built: Loom reports to whatever SDK is registered when it starts.
const telemetry = await startTelemetry();
if (telemetry) out.print(telemetry.description);
const db = await openShopDatabase();
out.print(db.description);
const config = { ...startConfig, port: process.env.PORT ? Number(process.env.PORT) : startConfig.port };
const app = await ShopApp.create({ client: db.client, config, logger, durable: db.keepsData });
let stopping = false;
stopOnSignals(async (signal) => {
  stopping = true;
  out.clearStatus();
  await app.stop(`${signal} received`);
  await telemetry?.shutdown();
  await db.close();
}, logger);

let url: string;
try {
  url = await app.start();
} catch (err) {
  if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
  url = await app.start(0);
  out.print(`port ${config.port} is taken; using a free one (set PORT to choose)`);
}
out.print(`Loom dashboard: ${app.dashboardUrl}  (queues, jobs, dead letters, schedules; live)`);
out.print(`Shop API on ${url}: POST /orders, GET /orders/:id, GET /jobs/:id, GET /stats, GET /dead-letters, POST /dead-letters/:id/retry`);
out.print('Submitting a demo burst: 8 orders, 3 of them posted twice, webhooks to endpoints that fail some or all of the time...');
try {
  const { burst, tally } = await runDemoBurst(app, out, { timeoutMs: 120_000 });
  tally.close();
  out.print(
    `Demo burst settled: ${burst.placed} orders, ${burst.deduplicated} repeated POSTs deduplicated, ${tally.of('flaky-webhook').dead} webhooks in the dead letters.`,
  );
} catch (err) {
  // Ctrl-C during the burst closes the database under it; the stop itself is logged.
  if (!stopping) logger.error({ err }, 'the demo burst failed; the API keeps serving');
}
if (!stopping) {
  out.print(`Serving until Ctrl-C. Open ${app.dashboardUrl} in a browser, or try:
  curl -s ${url}/stats
  curl -s ${url}/dead-letters                    # the two webhooks whose endpoints refused 5 times
  curl -s -X POST ${url}/dead-letters/<id>/retry # their endpoints answer now: the job completes
  curl -s -X POST ${url}/orders -H 'content-type: application/json' \\
       -d '{"orderId":"my-1","email":"me@example.com","items":[{"sku":"LOOM-MUG","quantity":1,"priceCents":1200}]}'
  curl -s ${url}/jobs/<jobId>
Or operate its jobs with the loom command, from another terminal in this repository:
  export ${db.kind === 'uri' ? '' : `MONGODB_URI='${db.uri}' `}LOOM_DATABASE=${config.database}
  npx loom stats
  npx loom dlq ls`);
}

/**
 * `npm run demo`: the same burst as `npm start`, with short delays; waits until every job has
 * completed or been dead-lettered, prints a summary and exits 0.
 */
import 'reflect-metadata';
import { demoConfig } from './config.js';
import { formatTable } from './demo/format-table.js';
import { LiveConsole } from './demo/live-console.js';
import { runDemoBurst } from './demo/run-burst.js';
import { CompactLogger } from './infra/compact-logger.js';
import { openShopDatabase } from './infra/database.js';
import { FakeMailTransport } from './mail/fake-mail-transport.js';
import { startTelemetry } from './infra/telemetry.js';
import { ShopApp } from './shop-app.js';
import { SHOP_JOBS } from './shop-jobs.js';
import { readJobOptions } from '@loom/core';

const out = new LiveConsole();
const logger = new CompactLogger(out.print, (process.env.LOG_LEVEL as 'info' | undefined) ?? 'warn');
const telemetry = await startTelemetry();
if (telemetry) out.print(telemetry.description);
const db = await openShopDatabase();
out.print(db.description);
const app = await ShopApp.create({ client: db.client, config: demoConfig, logger, durable: db.keepsData });
let exitCode = 0;
try {
  await app.start();
  const { burst, tally } = await runDemoBurst(app, out, { timeoutMs: 60_000 });
  const names = SHOP_JOBS.map((cls) => readJobOptions(cls)?.name ?? cls.name).filter((name) => name !== 'nightly-report' && name !== 'render-invoice'); // not part of the burst
  const total = tally.total;
  out.print(
    formatTable(
      ['job', 'completed', 'retried', 'dead-lettered'],
      [
        ...names.map((name) => [name, tally.of(name).completed, tally.of(name).retried, tally.of(name).dead]),
        ['all jobs', total.completed, total.retried, total.dead],
      ],
    ),
  );
  out.print(
    formatTable(
      ['', 'count'],
      [
        ['orders placed', burst.placed],
        ['repeated POSTs', burst.repeated],
        ['deduplicated (enqueue returned the existing job)', burst.deduplicated],
        ['receipts sent', app.container.get(FakeMailTransport).sent.length],
      ],
    ),
  );
  tally.close();
} catch (err) {
  logger.error({ err }, 'the demo failed');
  exitCode = 1;
} finally {
  await app.stop('demo finished');
  await telemetry?.shutdown();
  await db.close();
}
process.exit(exitCode);

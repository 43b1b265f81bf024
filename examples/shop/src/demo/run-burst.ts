import { FakeMailTransport } from '../mail/fake-mail-transport.js';
import type { ShopApp } from '../shop-app.js';
import { demoOrders, submitBurst, type BurstResult } from './demo-orders.js';
import { JobTally } from './job-tally.js';
import type { LiveConsole } from './live-console.js';
import { progressLine } from './progress-line.js';
import { waitUntilSettled } from './wait-until-settled.js';

/**
 * Sends the demo orders through the HTTP API and keeps a live line of their jobs until every one
 * has completed or been dead-lettered. The returned tally keeps counting until closed.
 */
export async function runDemoBurst(app: ShopApp, out: LiveConsole, options: { timeoutMs: number }): Promise<{ burst: BurstResult; tally: JobTally }> {
  const tally = new JobTally(app.loom);
  const mail = app.container.get(FakeMailTransport);
  const orders = demoOrders(`o${Date.now().toString(36)}`);
  let posted = 0;
  let active: number | undefined;
  const draw = (): void => out.setStatus(progressLine({ orders: orders.length, posted, tally, receiptsSent: mail.sent.length, active }));
  const ticker = setInterval(draw, 100);
  try {
    const burst = await submitBurst(app.url, orders, () => {
      posted++;
      draw();
    });
    await waitUntilSettled(app.store, burst.orderIds, {
      timeoutMs: options.timeoutMs,
      intervalMs: 100,
      onPoll: (n) => {
        active = n;
        draw();
      },
    });
    out.endStatus(`${progressLine({ orders: orders.length, posted, tally, receiptsSent: mail.sent.length })} │ all settled`);
    return { burst, tally };
  } catch (err) {
    tally.close();
    throw err;
  } finally {
    clearInterval(ticker);
  }
}

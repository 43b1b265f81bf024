import type { BurstResult } from './demo-orders.js';
import type { JobTally } from './job-tally.js';

/** The live line: what the burst has done so far. */
export function progressLine(state: { orders: number; burst?: BurstResult; posted: number; tally: JobTally; receiptsSent: number; active?: number }): string {
  const { tally, orders } = state;
  const hooks = tally.of('flaky-webhook');
  return [
    `POSTs ${state.posted}/${orders + 3}`,
    `receipts sent ${state.receiptsSent}/${orders}`,
    `shipped ${tally.of('fulfill-order').completed}/${orders}`,
    `webhooks ok ${hooks.completed}, retries ${hooks.retried}, dead ${hooks.dead}`,
    state.active === undefined ? '' : `jobs active ${state.active}`,
  ]
    .filter(Boolean)
    .join(' │ ');
}

import { FlakyWebhook } from './jobs/flaky-webhook.js';
import { FulfillOrder } from './jobs/fulfill-order.js';
import { NightlyReport } from './jobs/nightly-report.js';
import { RelayOutbox } from './jobs/relay-outbox.js';
import { SendReceipt } from './jobs/send-receipt.js';

/** The shop's job classes; Loom builds each through the container, dependencies injected. */
export const SHOP_JOBS = [SendReceipt, RelayOutbox, FulfillOrder, NightlyReport, FlakyWebhook] as const;

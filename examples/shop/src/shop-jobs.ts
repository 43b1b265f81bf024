import { FlakyWebhook } from './jobs/flaky-webhook.js';
import { FulfillOrder } from './jobs/fulfill-order.js';
import { NightlyReport } from './jobs/nightly-report.js';
import { RelayOutbox } from './jobs/relay-outbox.js';
import { RenderInvoice } from './jobs/render-invoice.js';
import { SendReceipt } from './jobs/send-receipt.js';

/**
 * The shop's job classes; Loom builds each through the container, dependencies injected, except
 * the sandboxed RenderInvoice, which each sandbox thread builds through src/sandbox-container.ts.
 */
export const SHOP_JOBS = [SendReceipt, RelayOutbox, FulfillOrder, NightlyReport, FlakyWebhook, RenderInvoice] as const;

/** The shop's sandbox module, compiled (threads load JavaScript: from the TypeScript sources, the package's dist/). */
export const SANDBOX_MODULE = import.meta.url.endsWith('.ts')
  ? new URL('../dist/sandbox-container.js', import.meta.url)
  : new URL('./sandbox-container.js', import.meta.url);

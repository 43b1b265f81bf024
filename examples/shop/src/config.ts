import type { Duration } from '@loom/core';
import type { RetentionOptions } from '@loom/mongo-store';

/** Settings of the shop. The demo shortens every delay so it finishes in seconds. */
export interface ShopConfig {
  /** Database holding the shop's collections and Loom's (`loom_*`). */
  database: string;
  /** HTTP port; 0 picks a free one. */
  port: number;
  /** FulfillOrder's durable sleep between charging and shipping (the parcel waits for pickup). */
  pickupDelay: Duration;
  /** The Retry-After the fake webhook endpoints answer with; FlakyWebhook backs off from it. */
  webhookRetryAfter: Duration;
  /** Parallel job runs in this instance. */
  concurrency: number;
  /** How long Ctrl-C lets running jobs finish before releasing them back to the queue. */
  shutdownGrace: Duration;
  /** How often idle workers look for due jobs (change streams wake them sooner on a replica set). */
  pollInterval: Duration;
  /** How long finished jobs and dead letters are kept (MongoDB TTL indexes). @default MongoStore's defaults */
  retention?: RetentionOptions;
  /** Orders above this total wait for a person's "manual review" (a wait token) before stock is reserved. @default 100_000 (1000.00) */
  manualReviewAboveCents?: number;
  /** How long a manual review may take; an order nobody reviewed by then is rejected. @default '3d' */
  manualReviewTimeout?: Duration;
}

/** `npm start`: delays a person can watch. */
export const startConfig: ShopConfig = {
  database: 'loom_shop',
  port: 3000,
  pickupDelay: '3s',
  webhookRetryAfter: '500ms',
  concurrency: 10,
  shutdownGrace: '10s',
  pollInterval: '250ms',
};

/** `npm run demo`: the same app with short delays, so every job settles within seconds. */
export const demoConfig: ShopConfig = {
  ...startConfig,
  port: 0,
  pickupDelay: '300ms',
  webhookRetryAfter: '50ms',
  pollInterval: '50ms',
};

import { inject } from 'inversify';
import { Job, type Clock, type JobContext } from '@loom/core';
import { OrderRepository } from '../orders/order-repository.js';
import { ReportRepository } from '../reports/report-repository.js';
import { TOKENS } from '../tokens.js';

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * Every night at 03:00 UTC: counts the previous day's orders. One run per fire time across all
 * instances (the fire time is the idempotency key), and a rerun rewrites the same report.
 */
@Job({ name: 'nightly-report', queue: 'reports', schedule: { cron: '0 3 * * *', timezone: 'UTC', catchUp: 'latest' } })
export class NightlyReport {
  constructor(
    @inject(OrderRepository) private readonly orders: OrderRepository,
    @inject(ReportRepository) private readonly reports: ReportRepository,
    @inject(TOKENS.Clock) private readonly clock: Clock,
  ) {}

  async run(_: undefined, ctx: JobContext): Promise<{ day: string; orders: number }> {
    const firedAt = ctx.scheduledFor ?? this.clock.now();
    const end = new Date(Math.floor(firedAt.getTime() / DAY_MS) * DAY_MS);
    const start = new Date(end.getTime() - DAY_MS);
    const day = start.toISOString().slice(0, 10);
    const orders = await this.orders.countCreatedBetween(start, end);
    await this.reports.save({ _id: day, orders, generatedAt: this.clock.now() });
    ctx.log.info({ day, orders }, `nightly report for ${day}: ${orders} orders`);
    return { day, orders };
  }
}

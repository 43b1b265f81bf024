import type { Container } from 'inversify';
import { JobsController } from '../jobs/jobs-controller.js';
import { OrdersController } from '../orders/orders-controller.js';
import { Router } from './router.js';

/** The shop's HTTP API. */
export function shopRoutes(container: Container): Router {
  const orders = container.get(OrdersController);
  const jobs = container.get(JobsController);
  return new Router()
    .add('POST', '/orders', (req) => orders.create(req))
    .add('GET', '/orders/:id', (req) => orders.get(req))
    .add('GET', '/jobs/:id', (req) => jobs.get(req))
    .add('GET', '/stats', () => jobs.stats())
    .add('GET', '/dead-letters', () => jobs.deadLetters())
    .add('POST', '/dead-letters/:id/retry', (req) => jobs.retry(req));
}

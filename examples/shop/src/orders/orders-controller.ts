import { inject, injectable } from 'inversify';
import { notFound } from '../http/http-error.js';
import type { RouteReply, RouteRequest } from '../http/router.js';
import { NewOrderSchema } from './order.js';
import { OrderService } from './order-service.js';

/** `POST /orders`, `GET /orders/:id`. */
@injectable()
export class OrdersController {
  constructor(@inject(OrderService) private readonly service: OrderService) {}

  /** 202 with the receipt job's id; 200 with the same ids when the order was placed before. */
  async create(req: RouteRequest): Promise<RouteReply> {
    const placed = await this.service.placeOrder(NewOrderSchema.parse(req.body));
    return {
      status: placed.created ? 202 : 200,
      body: {
        orderId: placed.orderId,
        jobId: placed.jobs.sendReceipt.id,
        deduplicated: placed.jobs.sendReceipt.deduplicated,
        jobs: Object.fromEntries(Object.entries(placed.jobs).map(([name, result]) => [name, result.id])),
      },
    };
  }

  async get(req: RouteRequest): Promise<RouteReply> {
    const order = await this.service.getOrder(req.params.id!);
    if (!order) throw notFound(`Order ${req.params.id}`);
    return { status: 200, body: order };
  }
}

import { ContainerModule } from 'inversify';
import type { MongoClient } from 'mongodb';
import type { Clock, Logger } from '@loom/core';
import { MongoStore } from '@loom/mongo-store';
import type { ShopConfig } from './config.js';
import { Carrier } from './fulfillment/carrier.js';
import { PaymentGateway } from './fulfillment/payment-gateway.js';
import { Warehouse } from './fulfillment/warehouse.js';
import { JobQueue } from './infra/job-queue.js';
import { UnitOfWork } from './infra/unit-of-work.js';
import { JobsController } from './jobs/jobs-controller.js';
import { FakeMailTransport } from './mail/fake-mail-transport.js';
import { MailTransport } from './mail/mail-transport.js';
import { OrderRepository } from './orders/order-repository.js';
import { OrderService } from './orders/order-service.js';
import { OrdersController } from './orders/orders-controller.js';
import { OutboxRepository } from './outbox/outbox-repository.js';
import { ReceiptRepository } from './receipts/receipt-repository.js';
import { ReportRepository } from './reports/report-repository.js';
import { TOKENS } from './tokens.js';
import { WebhookClient } from './webhooks/webhook-client.js';

/** Everything the shop binds: infrastructure values, repositories, services, controllers, fakes. */
export function shopModule(deps: { client: MongoClient; store: MongoStore; config: ShopConfig; clock: Clock; logger: Logger }): ContainerModule {
  return new ContainerModule(({ bind }) => {
    bind(TOKENS.Db).toConstantValue(deps.client.db(deps.config.database));
    bind(TOKENS.Config).toConstantValue(deps.config);
    bind(TOKENS.Clock).toConstantValue(deps.clock);
    bind(TOKENS.Logger).toConstantValue(deps.logger);
    bind(MongoStore).toConstantValue(deps.store);
    for (const cls of [
      JobQueue,
      UnitOfWork,
      OrderRepository,
      ReceiptRepository,
      OutboxRepository,
      ReportRepository,
      OrderService,
      OrdersController,
      JobsController,
    ]) {
      bind<object>(cls).toSelf();
    }
    // Stand-ins for the outside world; a real deployment binds its providers' clients here.
    bind(FakeMailTransport).toSelf();
    bind(MailTransport).toService(FakeMailTransport);
    for (const cls of [Warehouse, PaymentGateway, Carrier, WebhookClient]) bind<object>(cls).toSelf();
  });
}

/**
 * `@loom/nestjs`: Loom in NestJS applications, through Nest's own DI.
 *
 * ```ts
 * @Injectable()
 * @Job({ queue: 'emails', retries: 5 })
 * export class SendReceipt {
 *   constructor(private readonly mailer: Mailer) {}
 *   async run(payload: { email: string }) { await this.mailer.send(payload.email); }
 * }
 *
 * @Module({ imports: [LoomModule.forRoot({ store: new MongoStore({ url, database: 'app' }) })], providers: [SendReceipt, Mailer] })
 * export class AppModule {}
 *
 * @Injectable()
 * export class OrdersService { constructor(@InjectLoom() private readonly loom: Loom) {} }
 * ```
 *
 * @packageDocumentation
 */
export { LoomModule } from './loom-module.js';
export { InjectLoom } from './inject-loom.js';
export { LOOM_MODULE_OPTIONS, type LoomModuleOptions, type LoomModuleAsyncOptions } from './loom-module-options.js';

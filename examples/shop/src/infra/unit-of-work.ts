import { inject, injectable } from 'inversify';
import type { ClientSession } from 'mongodb';
import { MongoStore } from '@loom/mongo-store';
import { mongoSession } from './mongo-session.js';

/**
 * One MongoDB transaction for the shop's writes and Loom's enqueues: pass `session` to both, and
 * either everything commits or nothing does. Shop and Loom share one client, which transactions need.
 */
@injectable()
export class UnitOfWork {
  constructor(@inject(MongoStore) private readonly store: MongoStore) {}

  run<T>(fn: (session: ClientSession) => Promise<T>): Promise<T> {
    return this.store.withTransaction((session) => fn(mongoSession(session)));
  }
}

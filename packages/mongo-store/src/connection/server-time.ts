import { ReadPreference, type MongoClient } from 'mongodb';
import { StoreOperationError } from '../store-errors.js';

/**
 * The primary's clock, from `hello.localTime`: one cheap round trip that every MongoDB (mongod or
 * mongos, any version) answers. The primary, because the engines of one store must all compare
 * themselves with the same clock, whatever read preference the client has.
 */
export async function readServerTime(client: MongoClient): Promise<Date> {
  const hello = await client.db('admin').command({ hello: 1 }, { readPreference: ReadPreference.primary });
  const time: unknown = hello.localTime;
  if (!(time instanceof Date) || Number.isNaN(time.getTime())) {
    throw new StoreOperationError(`the server's hello reply has no valid localTime (got ${String(time)}), so its clock cannot be read`);
  }
  return time;
}

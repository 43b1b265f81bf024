import type { ClientSession } from 'mongodb';

/**
 * Loom hands sessions around as opaque values (its core knows nothing of MongoDB). With MongoStore
 * they are the driver's `ClientSession`, which the shop's own writes take.
 */
export function mongoSession(session: unknown): ClientSession {
  return session as ClientSession;
}

import type { Db } from 'mongodb';

/** What the connected deployment can do. */
export interface Deployment {
  /** Replica sets and sharded clusters: multi-document transactions and change streams. */
  replicated: boolean;
  /** Connected through mongos (a sharded cluster): `init()` checks the shard keys of Loom's collections. */
  mongos: boolean;
}

/**
 * Asks the server (`hello`) whether it is a replica-set member or a mongos. One `hello` answers
 * both: `init()` waits for it before anything else, so a second one would be a round trip more
 * on every start.
 */
export async function detectDeployment(db: Db): Promise<Deployment> {
  const hello = await db.admin().command({ hello: 1 });
  const mongos = hello.msg === 'isdbgrid';
  return { replicated: typeof hello.setName === 'string' || mongos, mongos };
}

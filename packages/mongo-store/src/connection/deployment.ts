import type { Db } from 'mongodb';

/** What the connected deployment can do. */
export interface Deployment {
  /** Replica sets and sharded clusters: multi-document transactions and change streams. */
  replicated: boolean;
}

/** Asks the server (`hello`) whether it is a replica-set member or a mongos. */
export async function detectDeployment(db: Db): Promise<Deployment> {
  const hello = await db.admin().command({ hello: 1 });
  return { replicated: typeof hello.setName === 'string' || hello.msg === 'isdbgrid' };
}

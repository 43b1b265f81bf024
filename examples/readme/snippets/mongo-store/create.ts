import type { Container } from 'inversify';

declare const container: Container;

import { Loom } from '@loom/core';
import { MongoStore } from '@loom/mongo-store';

const store = new MongoStore({ url: 'mongodb://db1,db2,db3/?replicaSet=rs0', database: 'app' });
const loom = await Loom.create({ container, store }); // init(): connect, create/verify indexes, reconcile

export { loom };

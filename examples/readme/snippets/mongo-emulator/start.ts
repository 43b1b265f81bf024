import { MongoClient } from 'mongodb';

declare const db: string, coll: string, filter: Record<string, unknown>, sort: Record<string, 1 | -1>;

import { MongoEmulator } from '@loom/mongo-emulator';
const emu = await MongoEmulator.start({ port: 0 }); // replicaSet: true (default, "rs0") | 'name' | false
const client = new MongoClient(emu.uri); // mongodb://127.0.0.1:PORT/?replicaSet=rs0
emu.commandCounts(); // { find: 3, findAndModify: 10, ... }
emu.runTtlSweep(); // expire TTL documents now, by the emulator clock
emu.explainPlan(db, coll, filter, sort); // 'loom_claim' | 'OR(a,b)' | 'COLLSCAN' ...
const report = emu.stepDown(2000); // a replica-set election: see "Step-downs"
await emu.stop();

export { client, report };

import { MongoClient } from 'mongodb';

import { appMongo } from '@loom/mongo-emulator';
const mongo = await appMongo(); // logs e.g. "MongoDB: the in-process emulator (@loom/mongo-emulator) at mongodb://127.0.0.1:PORT/?replicaSet=rs0, because MONGODB_URI is not set ..."
const client = new MongoClient(mongo.uri);
// on shutdown
await client.close();
await mongo.close();

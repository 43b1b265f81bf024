import { MongoClient } from 'mongodb';
import { MongoEmulator } from '../dist/index.js';
for (const [rs, extra] of [[true, ''], [false, ''], [true, '&directConnection=true']]) {
  const emu = await MongoEmulator.start({ port: 0, replicaSet: rs });
  const client = new MongoClient(emu.uri + (extra && (emu.uri.includes('?') ? extra : '?' + extra.slice(1))));
  const c = client.db('b').collection('c');
  await c.insertOne({ _id: 1, a: 1 });
  let t0 = performance.now();
  for (let i = 0; i < 100; i++) await c.findOne({ _id: 1 });
  console.log(rs, extra, 'findOne ms/op', (performance.now() - t0) / 100);
  t0 = performance.now();
  for (let i = 0; i < 100; i++) await client.db('admin').command({ ping: 1 });
  console.log(rs, extra, 'ping ms/op', (performance.now() - t0) / 100);
  await client.close(); await emu.stop();
}

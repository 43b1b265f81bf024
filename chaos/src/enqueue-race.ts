/**
 * One side of an enqueue race: prints ARMED, waits for a line on stdin, then enqueues a
 * ChaosEffect job for every key of KEYS (comma-separated, repeats welcome) all at once, each with
 * its own `enqueue` call, prints `RESULT <json>` (one { id, deduplicated } per key) and exits.
 * env: MONGODB_URI, DATABASE, KEYS. A failed enqueue makes it exit non-zero without RESULT.
 */
import { createInterface } from 'node:readline';
import { MongoClient } from 'mongodb';
import { chaosEnqueuer } from './enqueuer.js';

const { MONGODB_URI, DATABASE, KEYS = '' } = process.env;
if (!MONGODB_URI || !DATABASE) throw new Error('enqueue-race needs MONGODB_URI and DATABASE');
const client = new MongoClient(MONGODB_URI);
await client.connect();
const enqueuer = await chaosEnqueuer(client, DATABASE);
const keys = KEYS.split(',').filter(Boolean);
process.stdout.write('ARMED\n');
// Both racers start slowly; they race only once the test says GO to both.
await new Promise<void>((resolve) => {
  const lines = createInterface({ input: process.stdin });
  lines.once('line', () => {
    // An open stdin would keep the process alive after its work.
    lines.close();
    process.stdin.destroy();
    resolve();
  });
});
const results = await Promise.all(keys.map((key) => enqueuer.enqueue([key]).then(([r]) => r)));
process.stdout.write(`RESULT ${JSON.stringify(results)}\n`);
await enqueuer.close();
await client.close();

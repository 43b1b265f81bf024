// What one command costs when both processes were asleep, as on the latency scenario's path (a job
// every 50 ms): the round trip of a no-op command, each after a 50 ms pause, through each layer
// that stands between an engine and its server. Lines, p50 and p90 over N round trips:
//   - a raw TCP echo between two Node processes (the machine: waking a sleeping process);
//   - a raw OP_MSG `ping` to the emulator (the emulator's own cold path);
//   - `ping` through the MongoDB driver to the emulator (the driver's cold path on top);
//   - with redis-server on PATH: a raw `PING` to Redis, and `PING` through ioredis (BullMQ's client).
// The latency scenario's enqueue → start needs an insert, the change stream's event and a claim
// in a row, so two of the driver's round trips bound it from below. Run `npm run build` and
// `npx tsc -p bench/tsconfig.json` first (it starts Redis as the bench does).
//
// usage: node bench/tools/cold-round-trips.mjs [N=200]
import { spawn } from 'node:child_process';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { BSON, MongoClient } from 'mongodb';
import { startEmulatorProcess } from '../../packages/mongo-emulator/bench/emulator-process.mjs';
import { openRedis } from '../dist/redis-target.js';

const N = Number(process.argv[2] ?? 200);
const PAUSE_MS = 50;
const WARM_UP = 20;

/** Times `roundTrip` N times, each after a pause; the p50 and p90 in ms. */
async function cold(label, roundTrip) {
  for (let i = 0; i < WARM_UP; i++) await roundTrip();
  const times = [];
  for (let i = 0; i < N; i++) {
    await sleep(PAUSE_MS);
    const t0 = performance.now();
    await roundTrip();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  const at = (q) => times[Math.min(times.length - 1, Math.floor(times.length * q))].toFixed(2);
  console.log(`${label.padEnd(44)} p50 ${at(0.5).padStart(5)} ms   p90 ${at(0.9).padStart(5)} ms`);
}

/** A socket to 127.0.0.1:port whose `ask(bytes)` resolves when `complete(received)` says a reply is whole. */
async function rawClient(port, complete) {
  const socket = net.connect(port, '127.0.0.1');
  socket.setNoDelay(true);
  await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  let received = Buffer.alloc(0);
  let waiting;
  socket.on('data', (chunk) => {
    received = Buffer.concat([received, chunk]);
    const used = complete(received);
    if (used > 0) {
      received = received.subarray(used);
      waiting?.();
    }
  });
  return {
    ask: (bytes) => new Promise((resolve) => ((waiting = resolve), socket.write(bytes))),
    close: () => socket.destroy(),
  };
}

/** A child Node process echoing what it reads; its port. */
async function startEcho() {
  const source = `const s = require('net').createServer((c) => { c.setNoDelay(true); c.on('data', (d) => c.write(d)); });
    s.listen(0, '127.0.0.1', () => console.log(s.address().port));`;
  const child = spawn(process.execPath, ['-e', source], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise((resolve) => child.stdout.once('data', (d) => resolve(Number(String(d).trim()))));
  return { port, stop: () => child.kill() };
}

let requestId = 0;
/** An OP_MSG of one body section. */
function opMsg(command) {
  const body = BSON.serialize(command);
  const header = Buffer.alloc(21);
  header.writeInt32LE(21 + body.length, 0);
  header.writeInt32LE(++requestId, 4);
  header.writeInt32LE(2013, 12); // OP_MSG
  return Buffer.concat([header, body]);
}
const wholeMessage = (b) => (b.length >= 4 && b.length >= b.readInt32LE(0) ? b.readInt32LE(0) : 0);

const echo = await startEcho();
const echoClient = await rawClient(echo.port, (b) => (b.length >= 16 ? 16 : 0));
await cold('TCP echo, Node to Node', () => echoClient.ask(Buffer.alloc(16)));
echoClient.close();
echo.stop();

const emulator = await startEmulatorProcess();
const port = Number(new URL(emulator.uri).port);
const opMsgClient = await rawClient(port, wholeMessage);
await cold('emulator: raw OP_MSG ping', () => opMsgClient.ask(opMsg({ ping: 1, $db: 'admin' })));
opMsgClient.close();
const client = await new MongoClient(emulator.uri).connect();
const admin = client.db('admin');
await cold('emulator: ping through the MongoDB driver', () => admin.command({ ping: 1 }));
await client.close();
emulator.stop();

const redis = await openRedis(process.env);
if (redis.available) {
  const redisPort = redis.target.port;
  const rawRedis = await rawClient(redisPort, (b) => (b.includes('\r\n') ? b.indexOf('\r\n') + 2 : 0));
  await cold('Redis: raw PING', () => rawRedis.ask(Buffer.from('PING\r\n')));
  rawRedis.close();
  const { default: Redis } = await import('ioredis');
  const ioredis = new Redis({ port: redisPort });
  await cold('Redis: PING through ioredis', () => ioredis.ping());
  ioredis.disconnect();
  await redis.target.stop();
} else {
  console.log(`(the Redis lines are left out: ${redis.reason})`);
}

// jest's globalSetup: one MongoDB for the whole run instead of one per test file. It starts the
// servers startTestMongo() would pick (mongodb-memory-server with a cached mongod, else the
// emulator, a replica set and a standalone) in jest's main process, and hands their addresses to
// the workers through LOOM_TEST_MONGO_SHARED; every file still works in databases of its own.
// With MONGODB_URI set it does nothing (the files use that server). It loads the built package
// (npm test builds first); without a build, each file starts its own server, as before.
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const built = resolve(dirname(fileURLToPath(import.meta.url)), '../packages/testing/dist/mongo/index.js');

export default async function globalSetup() {
  if (process.env.MONGODB_URI || !existsSync(built)) return;
  const { startSharedTestMongo } = await import(pathToFileURL(built).href);
  // Read back by jest-global-teardown.mjs, which runs in this same process and context.
  globalThis.loomSharedTestMongo = await startSharedTestMongo();
}

import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from '@jest/globals';
import { Container } from 'inversify';
import { Loom, LoomError } from '@loom/core';
import { MongoEmulator } from '@loom/mongo-emulator';
import { MongoStore } from '@loom/mongo-store';

// A MongoDB that cannot be reached must fail init() in one line naming the hosts (never the
// password) within connectTimeout, not after the driver's 30 s server selection.

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as { port: number }).port;
}

/** A port nothing listens on (it was free a moment ago). */
async function closedPort(): Promise<number> {
  const server = createServer();
  const port = await listen(server);
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A TCP server that accepts connections and never answers: a hung host or a black-holing proxy. */
async function silentServer(): Promise<number> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => void sockets.add(socket));
  cleanups.push(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  return listen(server);
}

function storeAt(port: number, connectTimeout = '300ms'): MongoStore {
  const store = new MongoStore({ url: `mongodb://alice:s3cret@127.0.0.1:${port}/?replicaSet=rs0`, database: 'app', connectTimeout });
  cleanups.push(() => store.close());
  return store;
}

async function initError(store: MongoStore): Promise<LoomError> {
  const err = await store.init().then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!LoomError.is(err)) throw new Error(`expected a LoomError, got ${String(err)}`);
  return err;
}

describe('an unreachable MongoDB', () => {
  it('fails init() with STORE_UNREACHABLE in one line naming host and replica set, not the credentials', async () => {
    const port = await closedPort();
    const err = await initError(storeAt(port));
    expect(err.code).toBe('STORE_UNREACHABLE');
    expect(err.message).toContain(`MongoStore cannot reach MongoDB at 127.0.0.1:${port} (replica set rs0) within 300 ms`);
    expect(err.message).toMatch(/Check that mongod is running .*connectTimeout/);
    expect(err.message).not.toMatch(/s3cret|alice/);
    expect(err.message).not.toContain('\n');
  });

  it('fails the same way when the host accepts connections and never answers', async () => {
    const err = await initError(storeAt(await silentServer()));
    expect(err.code).toBe('STORE_UNREACHABLE');
    expect(err.message).toContain('within 300 ms');
  });

  it('stops Loom.create with that error', async () => {
    const store = storeAt(await closedPort());
    await expect(Loom.create({ container: new Container(), store, jobs: [] })).rejects.toMatchObject({ code: 'STORE_UNREACHABLE' });
  });

  it('connects on a later init() once the server is up', async () => {
    const port = await closedPort();
    const store = new MongoStore({ url: `mongodb://127.0.0.1:${port}/?replicaSet=rs0`, database: 'app', connectTimeout: '2s' });
    cleanups.push(() => store.close());
    expect((await initError(store)).code).toBe('STORE_UNREACHABLE');
    const emulator = await MongoEmulator.start({ port, replicaSet: 'rs0' });
    cleanups.push(() => emulator.stop());
    await store.init();
    expect(await store.listJobs({})).toEqual([]);
  });

  it('refuses a connectTimeout that is not a positive duration', () => {
    expect(() => new MongoStore({ url: 'mongodb://localhost', database: 'app', connectTimeout: 'soon' as never })).toThrow(/connectTimeout/);
    expect(() => new MongoStore({ url: 'mongodb://localhost', database: 'app', connectTimeout: 0 })).toThrow(/connectTimeout/);
  });
});

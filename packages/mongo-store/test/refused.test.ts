import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from '@jest/globals';
import { Container } from 'inversify';
import { Loom, LoomError } from '@loom/core';
import { MongoStore } from '@loom/mongo-store';

// A refused connection (nothing listens on the port) is reported at once, with its cause, not
// after connectTimeout. The timeout here is far longer than jest's test timeout (30 s): a store
// that waited it out would fail the test by timing out.

const stores: MongoStore[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
});

/** A port nothing listens on (it was free a moment ago). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function refusedStore(port: number): MongoStore {
  const store = new MongoStore({ url: `mongodb://127.0.0.1:${port}/?replicaSet=rs0`, database: 'app', connectTimeout: '10m' });
  stores.push(store);
  return store;
}

describe('a MongoDB that refuses the connection', () => {
  it('fails init() at once with STORE_UNREACHABLE naming ECONNREFUSED, the driver error as its cause', async () => {
    const port = await closedPort();
    const err = await refusedStore(port)
      .init()
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(LoomError.is(err)).toBe(true);
    expect(err).toMatchObject({ code: 'STORE_UNREACHABLE', message: expect.stringContaining(`ECONNREFUSED 127.0.0.1:${port}`) });
    expect((err as Error).cause).toBeInstanceOf(Error);
    expect(((err as Error).cause as Error).message).toContain('ECONNREFUSED');
  });

  it('stops Loom.create at once', async () => {
    const store = refusedStore(await closedPort());
    await expect(Loom.create({ container: new Container(), store, jobs: [] })).rejects.toMatchObject({
      code: 'STORE_UNREACHABLE',
      message: expect.stringContaining('ECONNREFUSED'),
    });
  });
});

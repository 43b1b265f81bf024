/**
 * The MongoDB the app runs on: `MONGODB_URI` whenever it is set, and always in production. In
 * development without it, an in-process MongoDB from `@loom/mongo-emulator` (a devDependency,
 * loaded only on this path), so a fresh checkout starts with no setup; it keeps nothing after exit.
 */
export async function mongoUrl(log: (line: string) => void = console.warn): Promise<{ url: string; close(): Promise<void> }> {
  const url = process.env.MONGODB_URI;
  if (url) return { url, close: async () => {} };
  if (process.env.NODE_ENV === 'production') {
    throw new Error('MONGODB_URI is not set: in production, point it at a MongoDB replica set, e.g. mongodb://db1,db2,db3/?replicaSet=rs0');
  }
  const { MongoEmulator } = await import('@loom/mongo-emulator');
  const emulator = await MongoEmulator.start({ replicaSet: true });
  log(`MongoDB: the in-process emulator at ${emulator.uri}, because MONGODB_URI is not set (development only; it keeps nothing after exit)`);
  return { url: emulator.uri, close: () => emulator.stop() };
}

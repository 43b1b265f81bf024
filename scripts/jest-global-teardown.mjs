// jest's globalTeardown: stops the servers jest-global-setup.mjs started.
export default async function globalTeardown() {
  await globalThis.loomSharedTestMongo?.stop();
}

import 'reflect-metadata';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { Container } from 'inversify';
import { Loom, MemoryStore } from '@loom/core';
import { loomDashboard } from '@loom/dashboard';
import { ConsoleMailer, Mailer } from './mailer.js';
import { SendWelcome } from './send-welcome.js';

/**
 * `@loom/dashboard` mounted under /loom, in a plain node:http server and in an Express app, over a
 * store with one queued job; prints what each answers. The packaging test runs it from the packed
 * tarballs. No top-level await, so it runs as an ES module and as CommonJS.
 */
async function main(): Promise<void> {
  const container = new Container();
  container.bind(Mailer).to(ConsoleMailer);
  const store = new MemoryStore();
  const loom = await Loom.create({ container, store, jobs: [SendWelcome] });
  await loom.enqueue(SendWelcome, { userId: 'u1', email: 'ada@example.com' }, { delay: '1h' });

  const dashboard = loomDashboard({ store, basePath: '/loom', authorize: () => true });

  // node:http: the dashboard answers under /loom and hands every other request to the app.
  const plain = createServer((req, res) => dashboard(req, res, () => res.end('app')));

  // Express: the mount path tells the dashboard its base path.
  const app = express();
  app.use('/loom', dashboard);
  const withExpress = createServer(app);

  for (const [label, server] of [
    ['node:http', plain],
    ['express', withExpress],
  ] as const) {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const page = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/loom/jobs?status=queued`);
    const html = await page.text();
    console.log(`${label}: ${page.status} ${html.includes('SendWelcome') ? 'lists SendWelcome' : 'does not list SendWelcome'}`);
  }
  dashboard.close();
  await Promise.all([plain, withExpress].map((server: Server) => new Promise((resolve) => server.close(resolve))));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});

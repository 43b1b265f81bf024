import type { IncomingMessage } from 'node:http';
import type { JobStore } from '@loom/core';

declare const store: JobStore;
declare function isAdmin(req: IncomingMessage): boolean;

import { loomDashboard } from '@loom/dashboard';

const dashboard = loomDashboard({
  store, // any JobStore: the MongoStore your engines use
  basePath: '/loom',
  authorize: (req) => isAdmin(req), // who may act; without it the dashboard is read-only
});

export { dashboard };

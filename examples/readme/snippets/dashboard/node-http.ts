import type { IncomingMessage, ServerResponse } from 'node:http';
import { dashboard } from './setup.js';

declare function app(req: IncomingMessage, res: ServerResponse): void;

import { createServer } from 'node:http';
createServer((req, res) => dashboard(req, res, () => app(req, res))).listen(3000);
// or, serving nothing else: createServer(dashboard)

import { createServer } from 'node:http';
import type { Loom } from '@loom/core';
import { dashboard } from './setup.js';

declare const loom: Loom;
declare const secret: string; // the waitTokens.secret given to Loom.create

import { tokenEndpoint } from '@loom/dashboard';

const tokens = tokenEndpoint({ loom, secret, basePath: '/loom/tokens' });
createServer((req, res) => {
  if (req.url?.startsWith('/loom/tokens/')) return tokens(req, res); // the link itself is the credential
  dashboard(req, res); // behind your login, as before
}).listen(3000);

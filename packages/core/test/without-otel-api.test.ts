import { describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnNode } from '../../../chaos/src/node-process.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../../..');
const BUILD_MS = 240_000;
const RUN_MS = 60_000;

// @opentelemetry/api is an optional peer dependency: an application without it must run jobs
// (steps, progress, child jobs) exactly as before. The app runs in a process of its own in which
// the package cannot be resolved, against core's compiled dist/.
describe('@loom/core without @opentelemetry/api installed', () => {
  it(
    'runs a job with a step, progress and a child job; stores no trace context',
    async () => {
      execFileSync(process.execPath, [resolve(root, 'node_modules/typescript/bin/tsc'), '-b', 'packages/core/tsconfig.json'], { cwd: root, stdio: 'pipe' });
      const app = spawnNode(resolve(here, 'processes/plain-app.mjs'), [resolve(root, 'packages/core/dist/index.js')], {}, [
        '--import',
        resolve(root, 'packages/core/bench/hide-otel-api.mjs'),
      ]);
      const line = await app.waitForLine(/^\{/, RUN_MS);
      expect(await app.exited).toBe(0);
      expect(JSON.parse(line)).toEqual({
        apiImport: 'ERR_MODULE_NOT_FOUND',
        status: 'completed',
        result: 'done',
        progress: [50],
        trace: null,
        children: [['completed', null]],
      });
      expect(app.stderr()).toBe('');
    },
    BUILD_MS + RUN_MS,
  );
});

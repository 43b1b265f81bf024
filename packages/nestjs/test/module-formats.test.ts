import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from '@jest/globals';

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), 'fixtures');

/**
 * Runs a fixture app in its own Node process, against the built packages (`npm test` builds
 * first), so Node's own module loader decides what loads: no jest transform in between.
 */
async function runApp(file: string): Promise<unknown> {
  const { stdout } = await promisify(execFile)(process.execPath, [join(FIXTURES, file)], { cwd: FIXTURES });
  return JSON.parse(stdout.trim().split('\n').pop()!);
}

describe('@loom/nestjs in both module formats', () => {
  const expected = { sameJob: true, status: 'completed', sent: ['ada@example.com'] };

  it('works in a CommonJS Nest app (require), with one copy of @loom/core shared with the app', async () => {
    expect(await runApp('commonjs-app.cjs')).toEqual(expected);
  });

  it('works in an ESM Nest app (import)', async () => {
    expect(await runApp('esm-app.mjs')).toEqual(expected);
  });
});

#!/usr/bin/env node
// A newcomer's set-up, checked: a fresh clone of this repository (at HEAD, or the ref given), then
// the documented `npm install` (here `npm ci`, the same tree from the lock file), `npm run build`,
// and the commands the READMEs tell them to type: `npx loom` and `npx loom-mongo-emulator` must
// run OUR bins. npm links a workspace's bin only if its file exists at install time, before any
// build; when it does not, `npx loom` falls through to an unrelated registry package (`--no-install`
// makes that a failure here instead of a download).
//
// Slow (a full install and build: about 2-4 minutes on a 2-core machine), so scripts/test.mjs runs
// it only in CI (CI=true). Locally: `npm run test:fresh-clone [ref]`.
//
//   node scripts/test-fresh-clone.mjs [ref]     default: HEAD (commit first: the clone has no work tree changes)
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const ref = process.argv[2] ?? 'HEAD';

/** The environment of a newcomer's shell: nothing inherited from a test runner or an npm script. */
function userEnv() {
  const env = { ...process.env, NO_COLOR: '1' };
  for (const key of Object.keys(env)) if (key.startsWith('npm_') || key.startsWith('JEST_') || key === 'NODE_OPTIONS' || key === 'MONGODB_URI') delete env[key];
  return env;
}

function run(command, args, cwd, { allowFailure = false } = {}) {
  const started = Date.now();
  const result = spawnSync(command, args, { cwd, env: userEnv(), encoding: 'utf8', timeout: 10 * 60_000 });
  const output = `${result.stdout ?? ''}${result.stderr ?? ''}`;
  console.log(`[fresh-clone] ${command} ${args.join(' ')}: exit ${result.status ?? result.signal} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  if (result.status !== 0 && !allowFailure) throw new Error(`${command} ${args.join(' ')} (in ${cwd}) exited ${result.status ?? result.signal}:\n${output}`);
  return { status: result.status, output };
}

const failures = [];
function expectOutput(what, { status, output }, expected) {
  if (status === 0 && output.includes(expected)) return;
  failures.push(`${what}: expected exit 0 and ${JSON.stringify(expected)}, got exit ${status}:\n${output}`);
}

const scratch = mkdtempSync(join(tmpdir(), 'loom-clone-'));
const clone = join(scratch, 'loom');
try {
  const commit = spawnSync('git', ['rev-parse', ref], { cwd: ROOT, encoding: 'utf8' }).stdout.trim();
  run('git', ['clone', '--quiet', '--no-checkout', ROOT, clone], scratch);
  run('git', ['checkout', '--quiet', commit], clone);
  run('npm', ['ci', '--prefer-offline', '--no-audit', '--no-fund'], clone);
  // Before the build the launchers answer, and say what to do.
  const unbuilt = run('npx', ['--no-install', 'loom', '--help'], clone, { allowFailure: true });
  if (!unbuilt.output.includes('npm run build'))
    failures.push(`npx loom before the build: expected it to say "npm run build", got exit ${unbuilt.status}:\n${unbuilt.output}`);
  run('npm', ['run', 'build'], clone);
  expectOutput(
    'npx --no-install loom --help',
    run('npx', ['--no-install', 'loom', '--help'], clone, { allowFailure: true }),
    'loom: steer the jobs of a Loom MongoDB store',
  );
  expectOutput(
    'npx --no-install loom-mongo-emulator --help',
    run('npx', ['--no-install', 'loom-mongo-emulator', '--help'], clone, { allowFailure: true }),
    'usage: loom-mongo-emulator',
  );
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
if (failures.length > 0) {
  console.error(`[fresh-clone] FAILED at ${ref}:\n${failures.join('\n')}`);
  process.exit(1);
}
console.log(`[fresh-clone] passed at ${ref}: npx loom and npx loom-mongo-emulator run this repository's bins`);

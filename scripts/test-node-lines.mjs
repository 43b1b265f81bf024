#!/usr/bin/env node
// Runs the core suites (packages/core, packages/testing: the engine on MemoryStore) on the other
// supported Node lines. The full suite runs on the machine's Node (`npm test`); this adds 22 and 24.
// Node binaries come from the npm registry (the node-<platform>-<arch> packages, fetched through
// `npm pack`, so npm's cache serves them after the first time) and are kept unpacked in
// node_modules/.cache/loom-node/<version>/.
//
//   node scripts/test-node-lines.mjs [version ...]     default: the versions below
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** One exact version per supported line besides the machine's (exact, so CI is reproducible). */
const VERSIONS = ['22.23.5', '24.22.3'];
const SUITES = ['packages/core', 'packages/testing'];

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const CACHE = join(ROOT, 'node_modules', '.cache', 'loom-node');

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { stdio: 'inherit', ...options });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} exited ${result.status ?? result.signal}`);
  return result;
}

/** The path of a `node` binary of `version`, fetched from the npm registry on first use. */
function nodeBinary(version) {
  const binary = join(CACHE, version, 'bin', 'node');
  if (existsSync(binary)) return binary;
  const pkg = `node-${process.platform}-${process.arch}@${version}`;
  const scratch = mkdtempSync(join(tmpdir(), 'loom-node-'));
  try {
    console.log(`[node-lines] fetching ${pkg} from the npm registry`);
    run('npm', ['pack', pkg, '--silent', '--pack-destination', scratch], { stdio: ['ignore', 'ignore', 'inherit'] });
    const tarball = readdirSync(scratch).find((f) => f.endsWith('.tgz'));
    if (!tarball) throw new Error(`npm pack ${pkg} wrote no tarball`);
    mkdirSync(join(CACHE, version), { recursive: true });
    run('tar', ['-xzf', join(scratch, tarball), '-C', join(CACHE, version), '--strip-components=1']);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  if (!existsSync(binary)) throw new Error(`${pkg} has no bin/node`);
  return binary;
}

/** Runs the suites on one Node; resolves with its exit code and everything it printed. */
function suitesOn(version, node) {
  return new Promise((resolveRun) => {
    const child = spawn(node, ['--experimental-vm-modules', join(ROOT, 'node_modules/jest/bin/jest.js'), ...SUITES], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const output = [];
    child.stdout.on('data', (chunk) => output.push(chunk));
    child.stderr.on('data', (chunk) => output.push(chunk));
    child.on('close', (code, signal) => resolveRun({ version, code: code ?? signal, output: Buffer.concat(output).toString() }));
  });
}

const versions = process.argv.slice(2).length > 0 ? process.argv.slice(2) : VERSIONS;
const binaries = versions.map((version) => [version, nodeBinary(version)]);
// Jest runs one worker on a two-core machine: the lines run side by side, each printed when done.
console.log(`[node-lines] ${SUITES.join(', ')} on Node ${versions.join(' and ')}`);
const results = await Promise.all(binaries.map(([version, node]) => suitesOn(version, node)));
for (const { version, code, output } of results) {
  console.log(`[node-lines] Node ${version}: ${code === 0 ? 'passed' : `FAILED (exit ${code})`}`);
  process.stdout.write(output);
}
if (results.some((r) => r.code !== 0)) process.exit(1);

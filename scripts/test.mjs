#!/usr/bin/env node
// `npm test`: the build, the type check, the jest suite, the README project, the other Node lines
// and the lint (ESLint and Prettier), in stages. Steps of one stage run side by side: the build and
// the type check are each one single-threaded tsc, and the README project and the Node lines each
// leave part of a core idle, so on a two-core machine (CI's) pairing them saves their shorter one's
// time; the lint (one single-threaded ESLint, then Prettier) takes that idle part. jest's stage
// runs alone (it keeps every core busy) and needs the build (child processes load dist/).
// The first step of a stage prints as it goes; the others print, whole, when they finish.
// A failing step fails the run, after its stage has finished.
// In CI (CI=true) a last stage checks a newcomer's set-up on a fresh clone at HEAD (install, build,
// `npx loom`: scripts/test-fresh-clone.mjs); it takes about 3 minutes, too long for every local run.
//
//   node scripts/test.mjs        (what `npm test` runs)
import { spawn } from 'node:child_process';

const JEST = ['node', '--experimental-vm-modules', 'node_modules/jest/bin/jest.js'];
const STAGES = [
  [
    ['build', ['npm', 'run', 'build']],
    ['typecheck', ['npm', 'run', 'typecheck']],
  ],
  [['jest', JEST]],
  [
    ['test:readme', ['npm', 'run', 'test:readme']],
    ['test:node-lines', ['npm', 'run', 'test:node-lines']],
    ['lint', ['npm', 'run', 'lint']],
  ],
  ...(process.env.CI === 'true' ? [[['test:fresh-clone', ['npm', 'run', 'test:fresh-clone']]]] : []),
];

/** Runs one step; resolves with its exit code (or signal) and, unless streamed, what it printed. */
function step(name, [command, ...args], streamed) {
  return new Promise((resolveStep) => {
    const started = Date.now();
    const child = spawn(command, args, { stdio: streamed ? 'inherit' : ['ignore', 'pipe', 'pipe'] });
    const output = [];
    child.stdout?.on('data', (chunk) => output.push(chunk));
    child.stderr?.on('data', (chunk) => output.push(chunk));
    child.on('error', (err) => output.push(Buffer.from(`${err.stack}\n`)));
    child.on('close', (code, signal) =>
      resolveStep({ name, code: code ?? signal, output: Buffer.concat(output).toString(), seconds: (Date.now() - started) / 1000 }),
    );
  });
}

const started = Date.now();
const timings = [];
for (const stage of STAGES) {
  console.log(`[test] ${stage.map(([name]) => name).join(' + ')}`);
  const results = await Promise.all(stage.map(([name, command], i) => step(name, command, i === 0)));
  for (const { name, code, output, seconds } of results) {
    if (output) process.stdout.write(output);
    console.log(`[test] ${name}: ${code === 0 ? 'passed' : `FAILED (exit ${code})`} in ${seconds.toFixed(0)} s`);
    timings.push(`${name} ${seconds.toFixed(0)} s`);
  }
  if (results.some((r) => r.code !== 0)) process.exit(1);
}
console.log(`[test] all passed in ${((Date.now() - started) / 1000).toFixed(0)} s (${timings.join(', ')})`);

#!/usr/bin/env node
/** Entry point of the `loom` command; see cli.ts. */
import { createInterface } from 'node:readline/promises';
import { runLoom } from './cli.js';

/** A yes/no question on the terminal; only when a person can answer it. */
async function confirm(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await rl.question(question)).trim());
  } finally {
    rl.close();
  }
}

process.exitCode = await runLoom(process.argv.slice(2), {
  env: process.env,
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  interactive: process.stderr.isTTY === true,
  ...(process.stdin.isTTY === true && process.stderr.isTTY === true ? { confirm } : {}),
});

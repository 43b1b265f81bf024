#!/usr/bin/env node
// Deletes from packages/<name>/dist every output whose source in packages/<name>/src is gone.
// `tsc -b` leaves the output of deleted sources behind, and `npm pack` would ship it (with source
// maps pointing at files that no longer exist). Outputs of existing sources are left alone, so
// the build after this stays incremental.
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const OUTPUT = /\.(?:js|d\.ts)(?:\.map)?$/;

function files(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)]));
}

for (const name of process.argv.slice(2)) {
  const dist = join(root, 'packages', name, 'dist');
  if (!existsSync(dist)) continue;
  for (const file of files(dist)) {
    if (!OUTPUT.test(file)) continue;
    const source = join(root, 'packages', name, 'src', relative(dist, file).replace(OUTPUT, '.ts'));
    if (!existsSync(source)) rmSync(file);
  }
}

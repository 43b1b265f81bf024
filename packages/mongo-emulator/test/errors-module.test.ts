import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MongoUriRequiredError } from '../src/index.js';

// The emulator's errors (what it tells programs, and the signals its parts throw to each other)
// live in one module, src/errors.ts, as in every package of Loom: a reader finds them all there.
const src = fileURLToPath(new URL('../src', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

describe("the emulator's errors", () => {
  it('are declared in src/errors.ts only', () => {
    const elsewhere = sources(src)
      .filter((file) => relative(src, file) !== 'errors.ts')
      .filter((file) => /class \w+ extends \w*Error\b/.test(readFileSync(file, 'utf8')))
      .map((file) => relative(src, file));
    expect(elsewhere).toEqual([]);
  });

  it('give programs a stable code where they reach them', () => {
    expect(new MongoUriRequiredError()).toMatchObject({ code: 'MONGODB_URI_REQUIRED', name: 'MongoUriRequiredError' });
  });
});

// `npm test` runs the build and the type check side by side, and jest loads sources: so every
// import a package exports must resolve to its source through tsconfig.check.json's `paths` and
// jest's moduleNameMapper, never through a dist/ that a clean clone does not have yet. A subpath
// export missing here passed locally (a stale dist/ answered) and failed CI's clean type check.
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = resolve(fileURLToPath(import.meta.url), '../../../..');

function exportedSpecifiers(): string[] {
  const specifiers: string[] = [];
  for (const dir of readdirSync(join(root, 'packages'))) {
    const manifest = JSON.parse(readFileSync(join(root, 'packages', dir, 'package.json'), 'utf8')) as {
      name: string;
      exports?: Record<string, unknown>;
    };
    for (const subpath of Object.keys(manifest.exports ?? { '.': null })) specifiers.push(manifest.name + subpath.slice(1));
  }
  return specifiers;
}

describe('workspace import mappings', () => {
  const specifiers = exportedSpecifiers();

  it('finds the packages and their subpath exports', () => {
    expect(specifiers).toEqual(expect.arrayContaining(['@loom/core', '@loom/core/internal', '@loom/testing/conformance-runner']));
  });

  it('maps every export to its source for the type check', () => {
    const check = JSON.parse(readFileSync(join(root, 'tsconfig.check.json'), 'utf8')) as { compilerOptions: { paths: Record<string, string[]> } };
    const unmapped = specifiers.filter((s) => !check.compilerOptions.paths[s]);
    expect(unmapped).toEqual([]);
  });

  it('maps every export to its source for jest', async () => {
    const config = (await import(pathToFileURL(join(root, 'jest.config.js')).href)) as { default: { moduleNameMapper: Record<string, string> } };
    const patterns = Object.keys(config.default.moduleNameMapper).map((p) => new RegExp(p));
    const unmapped = specifiers.filter((s) => !patterns.some((p) => p.test(s)));
    expect(unmapped).toEqual([]);
  });
});

// Node module hooks that let child processes of the multi-process tests run a TypeScript script:
// the script (and `./x.js` imports of .ts files next to it) is transpiled with the project's
// TypeScript, while `@loom/<pkg>` loads the package's compiled dist/ (the test builds it
// incrementally first: see children.ts). Transpiling every package source in each child took
// half a minute per process on a busy machine.
import { readFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { dirname, resolve as resolvePath } from 'node:path';
import ts from 'typescript';

const root = resolvePath(dirname(fileURLToPath(import.meta.url)), '../../../..');
const packages = { core: 'core', testing: 'testing', 'mongo-emulator': 'mongo-emulator', 'mongo-store': 'mongo-store' };

export async function resolve(specifier, context, next) {
  if (specifier === '@loom/testing/mongo') {
    return { url: pathToFileURL(resolvePath(root, 'packages/testing/dist/mongo/index.js')).href, shortCircuit: true };
  }
  const pkg = /^@loom\/([a-z-]+)$/.exec(specifier)?.[1];
  if (pkg && packages[pkg]) {
    return { url: pathToFileURL(resolvePath(root, `packages/${packages[pkg]}/dist/index.js`)).href, shortCircuit: true };
  }
  if (context.parentURL?.endsWith('.ts') && specifier.startsWith('.') && specifier.endsWith('.js')) {
    const candidate = new URL(specifier.replace(/\.js$/, '.ts'), context.parentURL);
    if (existsSync(fileURLToPath(candidate))) return { url: candidate.href, shortCircuit: true };
  }
  return next(specifier, context);
}

export async function load(url, context, next) {
  if (!url.endsWith('.ts')) return next(url, context);
  const source = await readFile(fileURLToPath(url), 'utf8');
  const { outputText } = ts.transpileModule(source, {
    fileName: fileURLToPath(url),
    compilerOptions: {
      module: ts.ModuleKind.ESNext,
      target: ts.ScriptTarget.ES2022,
      experimentalDecorators: true,
      emitDecoratorMetadata: true,
      sourceMap: false,
      inlineSourceMap: true,
    },
  });
  return { format: 'module', source: outputText, shortCircuit: true };
}

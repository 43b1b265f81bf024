import 'reflect-metadata';
import { spawnSync } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import ts from 'typescript';
import { Job, LoomError } from '@loom/core';

// Without experimentalDecorators TypeScript compiles @Job as a standard (TC39) decorator. Loom
// refuses it at once, naming the tsconfig settings, instead of running jobs that cannot get
// constructor dependencies.

const CORE = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SETTINGS = /"experimentalDecorators": true and "emitDecoratorMetadata": true/;

describe('@Job under standard decorators', () => {
  it('throws INVALID_JOB_CLASS naming the class and the tsconfig settings', () => {
    class Plain {
      async run(): Promise<void> {}
    }
    const context = { kind: 'class', name: 'Plain', addInitializer: () => {}, metadata: {} };
    let thrown: unknown;
    try {
      (Job({ name: 'plain' }) as (target: typeof Plain, context: unknown) => void)(Plain, context);
    } catch (err) {
      thrown = err;
    }
    expect(LoomError.is(thrown, 'INVALID_JOB_CLASS')).toBe(true);
    expect((thrown as Error).message).toMatch(/^@Job on class Plain ran as a standard \(TC39\) decorator/);
    expect((thrown as Error).message).toMatch(SETTINGS);
  });

  it('stops a module that tsc compiled without experimentalDecorators, when it loads (built package)', () => {
    const source = `
      import { Job } from ${JSON.stringify(pathToFileURL(resolve(CORE, 'dist/index.js')).href)};
      @Job({ name: 'no-deps' })
      export class NoDeps {
        async run(): Promise<void> {}
      }
      console.log('loaded');
    `;
    const { outputText } = ts.transpileModule(source, {
      compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ES2022, experimentalDecorators: false },
    });
    expect(outputText).toContain('__esDecorate'); // compiled as a standard decorator
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', `import 'reflect-metadata';\n${outputText}`], {
      cwd: CORE,
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(child.status).not.toBe(0);
    expect(child.stdout).not.toContain('loaded');
    expect(child.stderr).toContain('INVALID_JOB_CLASS');
    expect(child.stderr).toMatch(SETTINGS);
  });

  it('still works under legacy decorators (this file is compiled with experimentalDecorators)', () => {
    @Job({ name: 'legacy' })
    class Legacy {
      async run(): Promise<void> {}
    }
    expect(Legacy.name).toBe('Legacy');
  });
});

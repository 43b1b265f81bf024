import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from '@jest/globals';

// Loom as a user gets it: every package packed by `npm run pack`, installed into a fresh app with
// the README's own `npm install` lines, then the README's job run from an ES module project and
// from a CommonJS one (Node >= 20.19 require()s the ES modules), its test run under jest, vitest
// and node:test in both; in both, too, a Nest 11 app with @loom/nestjs and the dashboard mounted in
// node:http and in Express; and the `loom` command from the tarball.

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '../../..');
const EXAMPLE = resolve(HERE, '..');
const PACKAGES = ['@loom/core', '@loom/mongo-store', '@loom/testing', '@loom/mongo-emulator', '@loom/nestjs', '@loom/dashboard', '@loom/cli'];
const MINUTES = 60_000;

/** The project files a user writes, copied from examples/readme into each app. */
const PROJECT_FILES = [
  'tsconfig.json',
  'jest.config.mjs',
  'vitest.config.mts',
  'src/mailer.ts',
  'src/send-welcome.ts',
  'src/dev.ts',
  'src/nest-app.ts',
  'src/dashboard.ts',
  'test/welcome-fixture.ts',
  'test/send-welcome.test.ts',
  'test/send-welcome.vitest.ts',
  'test/send-welcome.node-test.ts',
];

/**
 * Test runners the app would install as devDependencies, and the web framework it already has
 * (Express, for the dashboard); linked from this checkout to save the download. Nest comes from the
 * registry, through the README's install line (which pins the major that runs on Node 20).
 */
const LINKED_RUNNERS = ['jest', 'ts-jest', '@jest/globals', 'vitest', 'express', '@types/express'];

const app = mkdtempSync(join(tmpdir(), 'loom-app-'));
afterAll(() => rmSync(app, { recursive: true, force: true }));

/** The environment of a user's shell: no jest worker variables, no MONGODB_URI (the dev path runs the emulator). */
function userEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  for (const key of Object.keys(env)) if (key.startsWith('JEST_') || key === 'NODE_OPTIONS' || key === 'MONGODB_URI') delete env[key];
  // Runners colour their summaries when `CI` is set (picocolors), which would split the lines matched below.
  delete env.FORCE_COLOR;
  return { ...env, NO_COLOR: '1', ...extra };
}

function run(command: string, args: string[], cwd: string, extra: Record<string, string> = {}): string {
  const result = spawnSync(command, args, { cwd, env: userEnv(extra), encoding: 'utf8', timeout: 4 * MINUTES });
  // Strip colour codes too, in case a runner ignores NO_COLOR.
  const output = `${result.stdout ?? ''}${result.stderr ?? ''}`.replace(/\x1b\[[0-9;]*m/g, ''); // eslint-disable-line no-control-regex -- colour codes start with ESC
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} (in ${cwd}) exited ${result.status ?? result.signal}:\n${output}`);
  return output;
}

interface PackResult {
  name: string;
  filename: string;
  files: { path: string }[];
}

/** Every file a package's `main`, `types` and `exports` point to. */
function entryPoints(manifest: Record<string, unknown>): string[] {
  const targets: string[] = [];
  const walk = (value: unknown): void => {
    if (typeof value === 'string') targets.push(value);
    else if (value && typeof value === 'object') Object.values(value).forEach(walk);
  };
  walk([manifest.main, manifest.types, manifest.exports, manifest.bin]);
  return targets.map((t) => t.replace(/^\.\//, ''));
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(join(dir, e.name)) : [join(dir, e.name)]));
}

describe('every package under packages/', () => {
  it('declares what a published package needs: license file, engines, repository, keywords, files', () => {
    const dirs = readdirSync(join(ROOT, 'packages')).filter((d) => existsSync(join(ROOT, 'packages', d, 'package.json')));
    expect(dirs.length).toBeGreaterThanOrEqual(PACKAGES.length);
    for (const dir of dirs) {
      const manifest = JSON.parse(readFileSync(join(ROOT, 'packages', dir, 'package.json'), 'utf8')) as Record<string, unknown>;
      expect({ dir, license: existsSync(join(ROOT, 'packages', dir, 'LICENSE')), manifest }).toMatchObject({
        dir,
        license: true,
        manifest: {
          license: 'MIT',
          engines: { node: expect.any(String) },
          repository: { directory: `packages/${dir}` },
          keywords: expect.any(Array),
          files: expect.any(Array),
        },
      });
    }
  });
});

describe('the packed packages in a fresh app', () => {
  let packs: PackResult[] = [];

  it('npm run pack makes a tarball of every package, each with its license, entry points and no build state', () => {
    packs = JSON.parse(run('npm', ['run', 'pack', '--silent', '--', '--json'], ROOT)) as PackResult[];
    expect(packs.map((p) => p.name).sort()).toEqual([...PACKAGES].sort());
    for (const pack of packs) {
      const files = pack.files.map((f) => f.path);
      const manifest = JSON.parse(readFileSync(join(ROOT, 'node_modules', pack.name, 'package.json'), 'utf8')) as Record<string, unknown>;
      expect({ pack: pack.name, missing: ['LICENSE', 'README.md', ...entryPoints(manifest)].filter((f) => !files.includes(f)) }).toEqual({
        pack: pack.name,
        missing: [],
      });
      expect({ pack: pack.name, buildState: files.filter((f) => f.endsWith('.tsbuildinfo')) }).toEqual({ pack: pack.name, buildState: [] });
      expect(manifest).toMatchObject({ license: 'MIT', engines: { node: expect.any(String) }, repository: expect.anything(), keywords: expect.any(Array) });
    }
  });

  it(
    "installs with the README's npm install lines, without pulling in mongodb-memory-server",
    () => {
      writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'my-app', private: true }));
      const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
      const installs = readme.split('\n').filter((line) => /^npm install (--save-dev )?<loom>\//.test(line));
      expect(installs.length).toBeGreaterThan(0);
      for (const line of installs) {
        const args = line
          .replace(/#.*$/, '')
          .trim()
          .split(/\s+/)
          .slice(1)
          .map((a) => a.replaceAll('<loom>', ROOT));
        run('npm', [...args, '--prefer-offline', '--no-audit', '--no-fund'], app);
      }
      for (const scope of ['@jest', '@types']) mkdirSync(join(app, 'node_modules', scope), { recursive: true });
      for (const runner of LINKED_RUNNERS) symlinkSync(join(ROOT, 'node_modules', runner), join(app, 'node_modules', runner), 'dir');
      for (const name of PACKAGES) expect({ name, installed: existsSync(join(app, 'node_modules', name, 'package.json')) }).toEqual({ name, installed: true });
      expect(existsSync(join(app, 'node_modules', 'mongodb-memory-server'))).toBe(false);
      // The Nest line pins the major that runs on Node 20 (Nest 12 needs Node 22).
      expect((JSON.parse(readFileSync(join(app, 'node_modules/@nestjs/core/package.json'), 'utf8')) as { version: string }).version).toMatch(/^11\./);
      // Source maps and declaration maps point at files that shipped.
      for (const name of PACKAGES) {
        const dir = join(app, 'node_modules', name);
        const maps = filesUnder(join(dir, 'dist')).filter((f) => f.endsWith('.map'));
        expect(maps.length).toBeGreaterThan(0);
        const dangling = maps.flatMap((map) =>
          (JSON.parse(readFileSync(map, 'utf8')) as { sources: string[] }).sources.map((s) => resolve(dirname(map), s)).filter((s) => !existsSync(s)),
        );
        expect({ name, dangling }).toEqual({ name, dangling: [] });
      }
    },
    6 * MINUTES,
  );

  it('runs the loom command from the tarball (npx loom)', () => {
    expect(run('npx', ['--no-install', 'loom', '--help'], app)).toContain('loom: steer the jobs of a Loom MongoDB store');
  });

  describe.each([
    ['an ES module', 'module'],
    ['a CommonJS', 'commonjs'],
  ])('in %s project', (_label, type) => {
    const project = join(app, type);

    it(
      'compiles with the README tsconfig and runs the job on MongoDB (dev mode: the emulator)',
      () => {
        for (const file of PROJECT_FILES) cpSync(join(EXAMPLE, file), join(project, file), { recursive: true });
        writeFileSync(join(project, 'package.json'), JSON.stringify({ type }));
        run('node', [join(app, 'node_modules/typescript/bin/tsc'), '-p', project], app);
        const compiled = readFileSync(join(project, 'dist/src/dev.js'), 'utf8');
        expect(compiled).toContain(type === 'commonjs' ? 'require("@loom/core")' : "from '@loom/core'");
        const output = run('node', ['dist/src/dev.js'], project);
        expect(output).toContain('mail to ada@example.com: Welcome aboard!');
        expect(output).toContain('because MONGODB_URI is not set');
      },
      3 * MINUTES,
    );

    it(
      'runs a Nest 11 app with @loom/nestjs and mounts the dashboard in node:http and in Express',
      () => {
        expect(run('node', ['dist/src/nest-app.js'], project)).toContain('hello, nest');
        const dashboard = run('node', ['dist/src/dashboard.js'], project);
        expect(dashboard).toContain('node:http: 200 lists SendWelcome');
        expect(dashboard).toContain('express: 200 lists SendWelcome');
      },
      3 * MINUTES,
    );

    it(
      'passes the job test under node:test, jest and vitest',
      () => {
        expect(run('node', ['--test', 'dist/test/send-welcome.node-test.js'], project)).toMatch(/# pass 1\n# fail 0/);
        const jest = run('node', [join(app, 'node_modules/jest/bin/jest.js')], project, { NODE_OPTIONS: '--experimental-vm-modules' });
        expect(jest).toMatch(/Tests:\s+1 passed, 1 total/);
        expect(run('node', [join(app, 'node_modules/vitest/vitest.mjs'), 'run'], project)).toMatch(/Tests\s+1 passed \(1\)/);
      },
      3 * MINUTES,
    );
  });
});

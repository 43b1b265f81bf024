import { describe, expect, it } from '@jest/globals';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, posix, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

// The architecture of packages/core/src, checked from its import lines. Each part (a top folder,
// or one of the facade files at the root of src/) may import only the parts listed for it here:
// read top to bottom, each uses only those above it. Type-only imports count: a type that points
// up is still a dependency a reader has to follow.
//
// - support/        errors, logger, clock, duration, plain data, small helpers: nothing of core
// - store/          the JobStore contract, JobRecord, MemoryStore
// - jobs/           what a job is: decorator, options, registry, class and context types
// - observability/  telemetry (metrics, traces) over store records
// - cron/           schedules; engine/scheduling.ts wires them into the engine
// - workflow/       steps, sleeps, children, signals; the suspension they throw and engine catches
// - operations/     Jobs and Queues (loom.jobs, loom.queues; also the dashboard's and CLI's)
// - sandbox/        @Job({ sandbox }): the pool of worker threads, the thread entry, the ctx bridge
// - loom-options.ts the options of Loom.create and their defaults, read by the engine
// - engine/         running jobs: wiring, worker pool, runs, leases, events
// - loom.ts         the facade users touch
// - internal.ts     @loom/core/internal: the seams @loom/testing drives the engine through (not API)
// - index.ts        the public entry point
const ALLOWED: Record<string, readonly string[]> = {
  support: [],
  store: ['support'],
  jobs: ['support', 'store'],
  observability: ['support', 'store', 'jobs'],
  cron: ['support', 'store', 'jobs'],
  workflow: ['support', 'store', 'jobs'],
  operations: ['support', 'store', 'jobs', 'workflow'],
  sandbox: ['support', 'store', 'jobs', 'workflow'],
  'loom-options': ['support', 'store', 'jobs', 'sandbox'],
  engine: ['support', 'store', 'jobs', 'observability', 'cron', 'workflow', 'operations', 'sandbox', 'loom-options'],
  loom: ['support', 'store', 'jobs', 'observability', 'cron', 'workflow', 'operations', 'sandbox', 'loom-options', 'engine'],
  internal: ['support', 'store', 'jobs', 'observability', 'cron', 'workflow', 'operations', 'sandbox', 'loom-options', 'engine', 'loom'],
  index: ['support', 'store', 'jobs', 'observability', 'cron', 'workflow', 'operations', 'sandbox', 'loom-options', 'engine', 'loom'],
};

/** Packages core must not import: it talks to storage only through JobStore, and depends on no other Loom package. */
const FORBIDDEN_PACKAGES = /^(mongodb|@loom\/)/;

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../src');

interface Import {
  /** The importing file, relative to src/ with forward slashes. */
  file: string;
  /** The specifier as written. */
  specifier: string;
  /** The imported file relative to src/, for relative specifiers. */
  target?: string;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

function toSrcPath(path: string): string {
  return relative(SRC, path).split(sep).join(posix.sep);
}

// `import x from`, `import type { a, b } from`, `export * from`, `export { a } from`, `import 'x'`, at
// the start of a line (so TSDoc examples, which start with ` * `, do not count); braces may span lines.
const BINDINGS = String.raw`(?:(?:[\w$]+\s*,\s*)?\{[^}]*\}|\*(?:\s+as\s+[\w$]+)?|[\w$]+(?:\s*,\s*\*\s+as\s+[\w$]+)?)`;
const IMPORT_LINE = new RegExp(
  String.raw`^[ \t]*(?:import|export)\s+(?:type\s+)?${BINDINGS}\s+from\s+['"]([^'"]+)['"]` + '|' + String.raw`^[ \t]*import\s+['"]([^'"]+)['"]`,
  'gm',
);

function importsOf(path: string): Import[] {
  const file = toSrcPath(path);
  const text = readFileSync(path, 'utf8');
  return [...text.matchAll(IMPORT_LINE)].map((match) => {
    const specifier = match[1] ?? match[2]!;
    if (!specifier.startsWith('.')) return { file, specifier };
    return { file, specifier, target: toSrcPath(resolve(dirname(path), specifier.replace(/\.js$/, '.ts'))) };
  });
}

/** The part a file belongs to: its top folder, or its own name for a file at the root of src/. */
function partOf(file: string): string {
  const [top, ...rest] = file.split('/');
  return rest.length > 0 ? top! : top!.replace(/\.ts$/, '');
}

const files = sourceFiles(SRC);
const imports = files.flatMap(importsOf);

/** The cycles of a directed graph: one path per strongly connected component of more than one node (or a self-loop). */
function cycles(edges: ReadonlyMap<string, ReadonlySet<string>>): string[][] {
  // Tarjan's algorithm, iterative enough for a source tree.
  let index = 0;
  const indexOf = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string): void => {
    indexOf.set(node, index);
    low.set(node, index);
    index++;
    stack.push(node);
    onStack.add(node);
    for (const next of edges.get(node) ?? []) {
      if (!indexOf.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node)!, indexOf.get(next)!));
      }
    }
    if (low.get(node) === indexOf.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1 || edges.get(node)?.has(node)) found.push(component.sort());
    }
  };
  for (const node of edges.keys()) if (!indexOf.has(node)) visit(node);
  return found;
}

function graph(pairs: Iterable<[string, string]>): Map<string, Set<string>> {
  const edges = new Map<string, Set<string>>();
  for (const [from, to] of pairs) {
    if (!edges.has(from)) edges.set(from, new Set());
    edges.get(from)!.add(to);
  }
  return edges;
}

describe('the layering of packages/core/src', () => {
  it('reads the import lines of every source file', () => {
    // Guards the parser: were it to miss imports, every other test here would pass for nothing.
    expect(files.length).toBeGreaterThan(50);
    expect(imports.filter((i) => i.target !== undefined).length).toBeGreaterThan(200);
    expect(importsOf(join(SRC, 'index.ts')).length).toBeGreaterThan(20);
  });

  it('has an allowed-dependency table without cycles, covering every part of src/', () => {
    expect(cycles(graph(Object.entries(ALLOWED).flatMap(([part, allowed]) => allowed.map((to): [string, string] => [part, to]))))).toEqual([]);
    const parts = [...new Set(files.map((path) => partOf(toSrcPath(path))))].sort();
    expect(parts.filter((part) => !(part in ALLOWED))).toEqual([]);
  });

  it('resolves every relative import to a file of src/', () => {
    const missing = imports.filter((i) => i.target !== undefined && !existsSync(join(SRC, i.target))).map((i) => `${i.file} imports ${i.specifier}`);
    expect(missing).toEqual([]);
  });

  it('lets each part import only the parts below it', () => {
    const wrong = imports
      .filter((i) => i.target !== undefined && partOf(i.file) !== partOf(i.target))
      .filter((i) => !(ALLOWED[partOf(i.file)] ?? []).includes(partOf(i.target!)))
      .map((i) => `${i.file} (${partOf(i.file)}) imports ${i.specifier} (${partOf(i.target!)})`);
    expect(wrong).toEqual([]);
  });

  it('has no import cycle between folders', () => {
    const pairs = imports.filter((i) => i.target !== undefined).map((i): [string, string] => [partOf(i.file), partOf(i.target!)]);
    expect(cycles(graph(pairs.filter(([from, to]) => from !== to)))).toEqual([]);
  });

  it('has no import cycle between files', () => {
    expect(cycles(graph(imports.filter((i) => i.target !== undefined).map((i): [string, string] => [i.file, i.target!])))).toEqual([]);
  });

  it('imports neither mongodb nor another Loom package', () => {
    expect(imports.filter((i) => FORBIDDEN_PACKAGES.test(i.specifier)).map((i) => `${i.file} imports ${i.specifier}`)).toEqual([]);
  });
});

import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';

// The folders of src/ (see "Layout" in the README) depend on each other without a cycle, so the
// tree reads top to bottom. Each folder is one node; a file at the top of src/ is a node of its own.

const here = dirname(fileURLToPath(import.meta.url));
const src = resolve(here, '../src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** The node a file belongs to: its folder under src/, or the file itself at the top. */
function nodeOf(file: string): string {
  const [first, ...rest] = relative(src, file).split(sep);
  return rest.length === 0 ? first! : `${first}/`;
}

/** Relative imports and re-exports of a source file (type-only ones too: they bind folders just as well). */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [...text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)'(\.{1,2}\/[^']+)'/g)].map((m) => m[1]!);
  return specs.map((spec) => resolve(dirname(file), spec.replace(/\.js$/, '.ts')));
}

/** Node → the nodes it imports from. */
function folderGraph(files: string[]): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  for (const file of files) {
    const from = nodeOf(file);
    const edges = graph.get(from) ?? new Set<string>();
    graph.set(from, edges);
    for (const target of importsOf(file)) {
      const to = nodeOf(target);
      if (to !== from) edges.add(to);
    }
  }
  return graph;
}

/** Every cycle found by a depth-first walk, each as the path that closes it. */
function cyclesOf(graph: Map<string, Set<string>>): string[][] {
  const cycles: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (node: string) => {
    state.set(node, 'open');
    path.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === 'open') cycles.push([...path.slice(path.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    path.pop();
    state.set(node, 'done');
  };
  for (const node of [...graph.keys()].sort()) if (!state.has(node)) visit(node);
  return cycles;
}

describe('mongo-store source layout', () => {
  const files = sourceFiles(src);
  const graph = folderGraph(files);

  it('finds a cycle when there is one (the check itself)', () => {
    const withCycle = new Map([
      ['writes/', new Set(['schema/'])],
      ['schema/', new Set(['claims/'])],
      ['claims/', new Set(['writes/'])],
    ]);
    expect(cyclesOf(withCycle)).toEqual([['claims/', 'writes/', 'schema/', 'claims/']]);
  });

  it('reads the imports of every folder', () => {
    expect(files.length).toBeGreaterThan(20);
    expect([...(graph.get('writes/') ?? [])]).toContain('schema/');
  });

  it('has no import cycle between folders', () => {
    expect(cyclesOf(graph)).toEqual([]);
  });

  it('names every folder in the README layout', () => {
    const readme = readFileSync(resolve(here, '../README.md'), 'utf8');
    const layout = readme.slice(readme.indexOf('## Layout'));
    const folders = [...graph.keys()].filter((node) => node.endsWith('/'));
    expect(folders.filter((folder) => !layout.includes(folder))).toEqual([]);
  });
});

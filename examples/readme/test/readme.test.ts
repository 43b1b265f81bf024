import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const SCRIPTS = Object.keys((JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts);
const CHECKED = (JSON.parse(readFileSync(join(ROOT, 'tsconfig.check.json'), 'utf8')) as { include: string[] }).include;

interface Block {
  lang: string;
  lines: string[];
  /** The `<!-- snippet: path -->` line right before the fence, if any. */
  snippet?: string;
  line: number;
}

function codeBlocks(markdown: string, name = 'README.md'): Block[] {
  const lines = markdown.split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const end = lines.findIndex((l, j) => j > i && l.startsWith('```'));
    if (end < 0) throw new Error(`${name}:${i + 1}: unclosed code fence`);
    const marker = /^<!-- snippet: (\S+) -->$/.exec(lines[i - 1] ?? '');
    blocks.push({ lang: open[1]!, lines: lines.slice(i + 1, end), snippet: marker?.[1], line: i + 1 });
    i = end;
  }
  return blocks;
}

/** True when `block` appears in `file` as consecutive lines, all shifted by the same indentation. */
function containsLines(file: string, block: readonly string[]): boolean {
  const lines = file.split('\n').map((l) => l.trimEnd());
  const wanted = block.map((l) => l.trimEnd());
  for (let start = 0; start + wanted.length <= lines.length; start++) {
    const first = lines[start]!;
    if (!first.endsWith(wanted[0]!)) continue;
    const indent = first.slice(0, first.length - wanted[0]!.length);
    if (indent.trim() !== '') continue;
    if (wanted.every((w, k) => lines[start + k] === (w === '' ? '' : indent + w))) return true;
  }
  return false;
}

/** Whether tsconfig.check.json's include (folders and files, with `*` globs) covers the path. */
function typeChecked(path: string): boolean {
  return CHECKED.some((pattern) => new RegExp(`^${pattern.replace(/\./g, '\\.').replace(/\*/g, '[^/]+')}(/|$)`).test(path));
}

/** A TypeScript block must name (by its snippet line) a type-checked file it is a contiguous part of. */
function expectTakenFromCheckedFile(where: string, block: Block): void {
  expect({ where, snippet: block.snippet }).toEqual({ where, snippet: expect.any(String) });
  const path = block.snippet!;
  expect({ where, path, typeChecked: typeChecked(path) }).toEqual({ where, path, typeChecked: true });
  expect({ where, path, exists: existsSync(join(ROOT, path)) }).toEqual({ where, path, exists: true });
  const matches = containsLines(readFileSync(join(ROOT, path), 'utf8'), block.lines);
  expect({ where, path, matchesFile: matches }).toEqual({ where, path, matchesFile: true });
}

/** Configuration files the README shows: each must be one the tests use (packaging.test.ts copies these). */
const CONFIG_FILES = ['examples/readme/tsconfig.json', 'examples/readme/jest.config.mjs'];

const blocks = codeBlocks(README);

describe('README.md', () => {
  it('has code blocks, each TypeScript block taken from a type-checked file', () => {
    const ts = blocks.filter((b) => b.lang === 'ts');
    expect(ts.length).toBeGreaterThanOrEqual(8);
    for (const block of ts) expectTakenFromCheckedFile(`README.md:${block.line}`, block);
  });

  it('shows each configuration block as the whole of a file the tests use', () => {
    const configs = blocks.filter((b) => b.lang === 'json' || b.lang === 'js');
    expect(configs.map((b) => b.snippet).sort()).toEqual([...CONFIG_FILES].sort());
    for (const block of configs) {
      const file = readFileSync(join(ROOT, block.snippet!), 'utf8').trimEnd().split('\n');
      expect({ where: `README.md:${block.line}`, lines: block.lines }).toEqual({ where: `README.md:${block.line}`, lines: file });
    }
  });

  it('only has TypeScript, configuration and shell blocks; its npm commands are root scripts, npm ci, or installs into your project', () => {
    for (const block of blocks) expect([block.line, block.lang]).toEqual([block.line, expect.stringMatching(/^(ts|sh|json|js)$/)]);
    const commands = blocks.filter((b) => b.lang === 'sh').flatMap((b) => b.lines.map((l) => l.replace(/#.*$/, '').trim()).filter(Boolean));
    expect(commands.length).toBeGreaterThan(0);
    for (const command of commands) {
      // `npm install <loom>/packs/...` lines are run in a fresh app by packaging.test.ts.
      if (/^npm install (--save-dev )?<loom>\/packs\//.test(command)) continue;
      const script = /^npm (?:run )?(\S+)$/.exec(command)?.[1];
      expect({ command, script }).toEqual({ command, script: expect.any(String) });
      if (script !== 'install' && script !== 'ci') expect(SCRIPTS).toContain(script);
    }
  });

  it('links only to files and anchors that exist', () => {
    const anchors = new Set(
      [...README.matchAll(/^#+ (.+)$/gm)].map((m) =>
        m[1]!
          .toLowerCase()
          .replace(/[^a-z0-9 -]/g, '')
          .replace(/ /g, '-'),
      ),
    );
    for (const [, target] of README.matchAll(/\]\(([^)]+)\)/g)) {
      if (/^https?:/.test(target!)) continue;
      const [path, anchor] = target!.split('#');
      if (path) expect({ target, exists: existsSync(join(ROOT, path)) }).toEqual({ target, exists: true });
      if (anchor && !path) expect({ target, anchor: anchors.has(anchor) }).toEqual({ target, anchor: true });
    }
  });
});

/**
 * The package READMEs' TypeScript blocks, like the main README's: each is a contiguous part of a
 * type-checked file (examples/readme/snippets/, compiled by `npm run typecheck`), named by the
 * `<!-- snippet: path -->` line before it.
 */
describe('the package READMEs', () => {
  const readmes = readdirSync(join(ROOT, 'packages'))
    .map((dir) => `packages/${dir}/README.md`)
    .filter((path) => existsSync(join(ROOT, path)));

  it.each(readmes)('%s: each TypeScript block is taken from a type-checked file', (readme) => {
    const ts = codeBlocks(readFileSync(join(ROOT, readme), 'utf8'), readme).filter((b) => b.lang === 'ts');
    for (const block of ts) expectTakenFromCheckedFile(`${readme}:${block.line}`, block);
  });
});

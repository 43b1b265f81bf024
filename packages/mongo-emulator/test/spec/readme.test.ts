// The emulator README's "Differences from MongoDB 7.0" section is generated from the refusal
// table; this test fails when they drift apart (UPDATE_README=1 rewrites the section).
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import { differencesSection, REFUSALS } from './refusals.js';
import { loadSuite } from './runner/runner.js';

const README = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'README.md');
const HEADING = '## Differences from MongoDB 7.0';

function countFile(suite: string, file: string): number {
  const found = loadSuite(suite).find((f) => f.name === file);
  if (!found) throw new Error(`refusal table names ${suite}/${file}, which is not a spec file`);
  return found.tests.length;
}

describe('emulator README', () => {
  it('lists exactly the differences in the refusal table', () => {
    const text = readFileSync(README, 'utf8');
    const start = text.indexOf(HEADING);
    expect(start).toBeGreaterThanOrEqual(0);
    const next = text.indexOf('\n## ', start + HEADING.length);
    const end = next < 0 ? text.length : next + 1;
    const generated = differencesSection(countFile);
    if (process.env.UPDATE_README === '1') writeFileSync(README, text.slice(0, start) + generated + text.slice(end));
    else expect(text.slice(start, end)).toBe(generated);
  });

  it('names only spec tests that exist', () => {
    for (const refusal of REFUSALS) {
      for (const t of refusal.tests ?? []) {
        const file = loadSuite(t.suite).find((f) => f.name === t.file);
        expect(file).toBeDefined();
        for (const d of t.descriptions ?? []) expect(file?.tests.map((x) => x.description)).toContain(d);
      }
    }
  });
});

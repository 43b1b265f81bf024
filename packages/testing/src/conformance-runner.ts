/**
 * `@loom/testing/conformance-runner`: runs the store conformance suite without jest, e.g. from
 * `loom selftest` on a machine that has no test runner:
 *
 * ```ts
 * import { runStoreConformance } from '@loom/testing/conformance-runner';
 *
 * const results = await runStoreConformance('MongoStore', () => ({ store: new MongoStore({ url, database }) }));
 * console.log(results.filter((r) => !r.passed));
 * ```
 *
 * The suite ({@link describeStoreConformance}) is written for jest's globals. This runner provides
 * the ones it uses (`describe`, `it`, `it.skip`, `beforeEach`, `afterEach`, `beforeAll`,
 * `afterAll`, and `expect` from the `expect` package, jest's own), collects the cases, runs them
 * once, one at a time and in order, and puts the previous globals back afterwards.
 *
 * @packageDocumentation
 */
import { expect } from 'expect';
import { describeStoreConformance, type ConformanceOptions, type ConformanceStore } from './conformance.js';

/** The outcome of one conformance case. */
export interface ConformanceCaseResult {
  /** The case's full name: its describe blocks and its own, joined by ' > '. */
  name: string;
  passed: boolean;
  /** Registered with `it.skip` (then `passed` is true and nothing ran). */
  skipped?: boolean;
  /** Why it failed: the assertion's or the store's message, first lines only. */
  error?: string;
  durationMs: number;
}

/** Options of {@link runStoreConformance}. */
export interface ConformanceRunOptions extends ConformanceOptions {
  /** Called after each case, e.g. to print progress. */
  onResult?: (result: ConformanceCaseResult) => void;
  /** A case's limit when it names none itself. @default 60 s */
  timeoutMs?: number;
}

type Hook = () => unknown;
type TestFn = () => unknown;

interface Case {
  kind: 'case';
  name: string;
  fn?: TestFn;
  timeoutMs?: number;
}

interface Block {
  kind: 'block';
  name: string;
  children: (Block | Case)[];
  beforeAll: Hook[];
  afterAll: Hook[];
  beforeEach: Hook[];
  afterEach: Hook[];
}

const newBlock = (name: string): Block => ({ kind: 'block', name, children: [], beforeAll: [], afterAll: [], beforeEach: [], afterEach: [] });

const GLOBALS = ['describe', 'it', 'test', 'beforeEach', 'afterEach', 'beforeAll', 'afterAll', 'expect'] as const;

/** Builds the tree of blocks and cases as the suite's `describe`/`it` calls declare them. */
function collector(root: Block): Record<(typeof GLOBALS)[number], unknown> {
  let current = root;
  const describe = (name: string, body: () => void) => {
    const block = newBlock(name);
    current.children.push(block);
    const parent = current;
    current = block;
    try {
      body();
    } finally {
      current = parent;
    }
  };
  let skipping = false;
  describe.skip = (name: string, body: () => void) => {
    const was = skipping;
    skipping = true;
    try {
      describe(name, body);
    } finally {
      skipping = was;
    }
  };
  const it = (name: string, fn: TestFn, timeoutMs?: number) => {
    if (skipping) return it.skip(name);
    current.children.push(timeoutMs === undefined ? { kind: 'case', name, fn } : { kind: 'case', name, fn, timeoutMs });
  };
  it.skip = (name: string) => {
    current.children.push({ kind: 'case', name });
  };
  return {
    describe,
    it,
    test: it,
    beforeEach: (fn: Hook) => current.beforeEach.push(fn),
    afterEach: (fn: Hook) => current.afterEach.push(fn),
    beforeAll: (fn: Hook) => current.beforeAll.push(fn),
    afterAll: (fn: Hook) => current.afterAll.push(fn),
    expect,
  };
}

function describeError(err: unknown): string {
  const text = err instanceof Error ? err.message || String(err) : String(err);
  // expect's messages carry terminal colours; a report wants plain text.
  return (
    text
      // eslint-disable-next-line no-control-regex -- the escape character is what terminal colour codes start with
      .replace(/\u001b\[[0-9;]*m/g, '')
      .split('\n')
      .filter((l) => l.trim() !== '')
      .slice(0, 12)
      .join('\n')
  );
}

/** `fn()`, failed when it has not settled within `timeoutMs` (it may still run on; the next case starts anyway). */
async function within(fn: () => unknown, timeoutMs: number, what: string): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      Promise.resolve().then(fn),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what} did not finish within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

async function runBlock(
  block: Block,
  path: string[],
  eachHooks: { before: Hook[]; after: Hook[] },
  options: ConformanceRunOptions,
  results: ConformanceCaseResult[],
): Promise<void> {
  const timeoutMs = options.timeoutMs ?? 60_000;
  const before = [...eachHooks.before, ...block.beforeEach];
  const after = [...block.afterEach, ...eachHooks.after];
  const names = block.name === '' ? path : [...path, block.name];
  const report = (result: ConformanceCaseResult) => {
    results.push(result);
    options.onResult?.(result);
  };
  let setupError: unknown;
  for (const hook of block.beforeAll) {
    try {
      await within(hook, timeoutMs, 'beforeAll');
    } catch (err) {
      setupError = err;
      break;
    }
  }
  for (const child of block.children) {
    if (child.kind === 'block') {
      await runBlock(child, names, { before, after }, options, results);
      continue;
    }
    const name = [...names, child.name].join(' > ');
    if (!child.fn) {
      report({ name, passed: true, skipped: true, durationMs: 0 });
      continue;
    }
    const started = performance.now();
    let error: unknown = setupError;
    if (error === undefined) {
      try {
        for (const hook of before) await within(hook, timeoutMs, 'beforeEach');
        await within(child.fn, child.timeoutMs ?? timeoutMs, 'the case');
      } catch (err) {
        error = err;
      }
      // afterEach always runs (it closes the case's store), as jest runs it after a failure.
      for (const hook of after) {
        try {
          await within(hook, timeoutMs, 'afterEach');
        } catch (err) {
          error ??= err;
        }
      }
    }
    const durationMs = Math.round(performance.now() - started);
    report(error === undefined ? { name, passed: true, durationMs } : { name, passed: false, error: describeError(error), durationMs });
  }
  for (const hook of block.afterAll) {
    try {
      await within(hook, timeoutMs, 'afterAll');
    } catch (err) {
      report({ name: [...names, 'afterAll'].join(' > '), passed: false, error: describeError(err), durationMs: 0 });
    }
  }
}

/**
 * Runs the store conformance suite once, without jest, and resolves with one result per case, in
 * the suite's order. `factory` and `options` are those of {@link describeStoreConformance}. A failed
 * case never stops the run. Not re-entrant: one run at a time per process (it sets globals).
 */
export async function runStoreConformance(
  name: string,
  factory: () => Promise<ConformanceStore> | ConformanceStore,
  options: ConformanceRunOptions = {},
): Promise<ConformanceCaseResult[]> {
  const root = newBlock('');
  const scope = globalThis as unknown as Record<string, unknown>;
  const saved = GLOBALS.map((key) => [key, Object.getOwnPropertyDescriptor(scope, key)] as const);
  const installed = collector(root);
  for (const key of GLOBALS) Object.defineProperty(scope, key, { value: installed[key], configurable: true, writable: true });
  try {
    const suiteOptions: ConformanceOptions = {};
    if (options.transactions !== undefined) suiteOptions.transactions = options.transactions;
    describeStoreConformance(name, factory, suiteOptions);
    const results: ConformanceCaseResult[] = [];
    await runBlock(root, [], { before: [], after: [] }, options, results);
    return results;
  } finally {
    for (const [key, descriptor] of saved) {
      if (descriptor) Object.defineProperty(scope, key, descriptor);
      else delete scope[key];
    }
  }
}

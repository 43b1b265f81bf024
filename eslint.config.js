// ESLint for the whole repository (flat config, ESLint 9): typescript-eslint's type-aware rules on
// every TypeScript file. Formatting is Prettier's alone (`.prettierrc.json`); `npm run lint` runs
// both. One program serves every file: tsconfig.check.json, the type check's own (it maps the
// @loom/* packages to their sources, so linting needs no build, and it holds the tests, which the
// packages' build tsconfigs leave out; the project service, one program per package tsconfig plus
// one for the tests, took 1.7 times the CPU on this repository).
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: ['**/node_modules/**', '**/dist/**', 'packs/**', 'coverage/**', 'test-artifacts/**', 'bench/results/**', 'packages/mongo-emulator/test/spec/**'],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { project: './tsconfig.check.json', tsconfigRootDir: import.meta.dirname },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // The rules this configuration is for: a promise nobody awaits, a promise where a plain value
      // belongs, an `await` on a non-promise, and `any` flowing into typed code.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/no-unsafe-argument': 'error',
      '@typescript-eslint/no-unsafe-assignment': 'error',
      '@typescript-eslint/no-unsafe-call': 'error',
      '@typescript-eslint/no-unsafe-member-access': 'error',
      '@typescript-eslint/no-unsafe-return': 'error',
      // `new (...args: any[]) => T` is how TypeScript spells "any constructor" (a mixin's constructor
      // must take `...args: any[]`); the arguments never flow into typed code.
      '@typescript-eslint/no-explicit-any': ['error', { ignoreRestArgs: true }],
      // Rejecting with a caught value (`unknown`) passes a failure on, as a rethrow does (which
      // `only-throw-error` allows); a rejection with any other non-Error is still reported.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingUnknown: true }],
      // TypeScript itself reports undefined names, knowing the globals of each tsconfig's `types`.
      'no-undef': 'off',
      // The code writes `x[i]!` after an indexed read as if `noUncheckedIndexedAccess` were on: the
      // assertion says the element exists, and turning that compiler option on keeps it right.
      '@typescript-eslint/no-unnecessary-type-assertion': 'off',
      // An `async` function without `await` is how the code makes a throw a rejection (job handlers,
      // store methods, callbacks typed to return a promise): callers see one kind of failure.
      '@typescript-eslint/require-await': 'off',
      // A `let` a closure reads before its one assignment stays a `let` (a `const` there could be read
      // in its temporal dead zone).
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      // `_name` marks a parameter or a destructured field left out on purpose.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
    },
  },
  {
    // Plain JavaScript (scripts, configs): no types to check; Node's globals.
    files: ['**/*.{js,mjs,cjs}'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: { ...tseslint.configs.disableTypeChecked.languageOptions, globals: globals.node },
  },
  {
    // CommonJS files (a CommonJS app among the Nest fixtures) load modules with require().
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs' },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // The dashboard's script runs in the browser.
    files: ['packages/dashboard/assets/**/*.js'],
    languageOptions: { globals: globals.browser },
  },
  {
    // README examples show a handler's full signature (a `ctx` it may not use) as users write it;
    // their lines are checked against the READMEs, so they keep the names the docs show.
    files: ['examples/readme/snippets/**/*.ts'],
    rules: { '@typescript-eslint/no-unused-vars': 'off' },
  },
);

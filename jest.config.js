// Tests run the TypeScript sources directly (ts-jest, ESM); type checking is `npm run typecheck`,
// which keeps ts-jest in fast transpile-only mode (isolatedModules in tsconfig.jest.json).
/** @type {import('jest').Config} */
export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  roots: ['<rootDir>/packages', '<rootDir>/examples', '<rootDir>/bench'],
  testMatch: ['**/test/**/*.test.ts'],
  // examples/readme is a project of its own, with its own jest config (npm run test:readme).
  testPathIgnorePatterns: ['/node_modules/', '/dist/', '<rootDir>/examples/readme/'],
  moduleNameMapper: {
    '^@loom/testing/mongo$': '<rootDir>/packages/testing/src/mongo/index.ts',
    '^@loom/testing/jest$': '<rootDir>/packages/testing/src/jest.ts',
    '^@loom/testing/conformance-runner$': '<rootDir>/packages/testing/src/conformance-runner.ts',
    // Not documented API: the seams @loom/testing drives the engine through.
    '^@loom/core/internal$': '<rootDir>/packages/core/src/internal.ts',
    '^@loom/(core|testing|mongo-emulator|mongo-store|nestjs|dashboard|cli)$': '<rootDir>/packages/$1/src/index.ts',
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: '<rootDir>/tsconfig.jest.json' }],
  },
  testTimeout: 30000,
  // Not used: one MongoDB for the whole run (scripts/jest-global-setup.mjs and -teardown.mjs, as
  // globalSetup/globalTeardown). It saves CPU (user 535 → 505 s) but not time (whole suite 333 →
  // 343 s, 2026-12-06): the one emulator, in jest's main process, serves both workers in turn, and
  // a heavy file's requests stall the other's (the fan-in test's interleaving changed under it).
  // One test file per core. jest's default (cores - 1) runs everything in one process on a 2-core
  // machine such as CI's, leaving a core idle while files wait on child processes and real I/O.
  // Tests must (and do) pass on a loaded machine; `--maxWorkers=1` still runs them in band.
  maxWorkers: '100%',
  // A worker's heap grows with every file it runs (each file's ES module graph stays reachable):
  // 1.7 GB by the end of the suite, and GC time with it. A worker past this limit after a file is
  // replaced by a fresh one: CPU 525 → 479 s for the whole suite (2026-12-06), memory bounded.
  workerIdleMemoryLimit: '800MB',
  // How long a worker may take to exit once the run is over before jest kills it and warns "failed
  // to exit gracefully" (default 500 ms). Measured under load (two CPU hogs, the core suites on
  // Node 20 and 22 alike): the workers' event loops were empty and their 'exit' fired within 2 ms,
  // yet the processes, with 750-900 MB resident, ended 1.1-1.2 s after jest asked. A leaked handle
  // keeps a worker alive for good, so it is still killed, and still reported, after this.
  workerGracefulExitTimeout: 5000,
};

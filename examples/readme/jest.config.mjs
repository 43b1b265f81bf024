// Jest runs the TypeScript tests as ES modules (ts-jest): Loom and inversify are ES modules, which
// jest loads only in its ESM mode on Node 20 and 22. Run it with NODE_OPTIONS=--experimental-vm-modules.
// The same file serves an ESM and a CommonJS project (hence .mjs and the module override).
/** @type {import('jest').Config} */
export default {
  testEnvironment: 'node',
  testMatch: ['**/test/**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/', '/dist/'],
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' }, // `import './mailer.js'` finds mailer.ts
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: { module: 'es2022', moduleResolution: 'bundler', esModuleInterop: true } }],
  },
};

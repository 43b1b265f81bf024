import { defineConfig } from 'vitest/config';

// Vitest compiles TypeScript with esbuild, which reads experimentalDecorators from tsconfig.json
// but cannot emit decorator metadata: inject constructor parameters with @inject(Token).
export default defineConfig({
  test: {
    include: ['test/**/*.vitest.ts'], // *.test.ts are this folder's jest tests
  },
});

import { defineConfig } from 'vitest/config';

// Tests start real servers, processes and git; on a shared 2-core machine they
// need generous timeouts. Speed is measured by `npm run bench`, never here.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});

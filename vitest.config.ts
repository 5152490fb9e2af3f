import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

// Tests start real servers, processes and git; on a shared 2-core machine they
// need generous timeouts. Speed is measured by `npm run bench`, never here.
// Two test files at once even on 2 cores (vitest's default there is one): most of a
// test's time is spent waiting on child processes, and the suite's wall time halves.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // One temp dir for the whole run, removed at its end (test/global-setup.ts).
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: Math.max(2, availableParallelism() - 1),
    // A worker keeps its modules from one test file to the next instead of loading them all again
    // (about 1 s of CPU a file): a fifth of the suite's CPU on 2 cores. No test file depends on a fresh
    // module graph; the few that change globals (undici's dispatcher, timers) restore them.
    isolate: false,
  },
});

import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two test files at a time whatever the machine (vitest's default is one fewer than the cores: one here): most
    // tests wait on sockets, child processes and Chromium, so two keep both cores busy. Measured on this project's
    // 2-core machine: the SQLite suite 25 → 12.5 minutes.
    maxWorkers: 2,
  },
});

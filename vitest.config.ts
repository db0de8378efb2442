import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    pool: 'forks',
    globalSetup: ['test/global-setup.ts'],
    // .ci/run asks for a JSON report to print its closing "N passed, N failed" line.
    reporters: process.env.ERDMA_SMCR_TEST_REPORT
      ? ['default', ['json', { outputFile: process.env.ERDMA_SMCR_TEST_REPORT }]]
      : ['default'],
  },
});

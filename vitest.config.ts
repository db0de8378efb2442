import { defineConfig } from 'vitest/config';

// Three kinds of suites, each runnable alone (`npm run test:unit`, `test:integration`, `test:vm`);
// `npm test` runs them all. docs/testing.md says what each kind needs.
export default defineConfig({
  test: {
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // .ci/run asks for a JSON report to print its closing "N passed, N failed" line.
    reporters: process.env.ERDMA_SMCR_TEST_REPORT
      ? ['default', ['json', { outputFile: process.env.ERDMA_SMCR_TEST_REPORT }]]
      : ['default'],
    projects: [
      // In process, on Node alone: no root, no Debian package, no build, seconds.
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'] } },
      // Real components: network namespaces, Debian's CNI plugins and containerd, the harness's
      // Kubernetes, the image, the CLI and webhook as processes.
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          globalSetup: ['test/setup/build.ts'],
        },
      },
      // Debian's kernel under qemu.
      {
        extends: true,
        test: {
          name: 'vm',
          include: ['test/vm/**/*.test.ts'],
          globalSetup: ['test/setup/build.ts'],
        },
      },
    ],
  },
});

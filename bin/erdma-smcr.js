#!/usr/bin/env node
// Entry point of the erdma-smcr CLI: runs the compiled TypeScript (built by `npm ci` via `prepare`).
import { main } from '../dist/cli/main.js';

main(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    console.error(`erdma-smcr: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = 2;
  },
);

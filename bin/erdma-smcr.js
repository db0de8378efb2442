#!/usr/bin/env node
// Entry point of the erdma-smcr CLI: runs the bundle (dist/bundle, built by `npm ci` via `prepare`;
// scripts/bundle.mjs says what is in it).
import { main } from '../dist/bundle/main.mjs';

main(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    console.error(`erdma-smcr: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = 2;
  },
);

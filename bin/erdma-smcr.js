#!/usr/bin/env node
// Entry point of the erdma-smcr CLI: runs the bundle (dist/bundle, built by `npm ci` via `prepare`;
// scripts/bundle.mjs says what is in it). CommonJS, as the bundle is (bin/package.json): a one-shot
// command then never loads Node's ES module loader (#43).
'use strict';
const { main } = require('../dist/bundle/main.cjs');

main(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    console.error(`erdma-smcr: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = 2;
  },
);

// What the integration and VM suites run, built once before them: the compiled CLI (dist/, and the
// bundle in dist/bundle that bin/erdma-smcr.js loads) and the native plugin with its sanitizer build. The unit suites need
// neither: they import the TypeScript sources.
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';

export default function setup(): void {
  execFileSync('make', ['-s', '-C', 'native', 'all', 'sanitize'], { stdio: 'inherit' });
  // From an empty dist/: tsc never removes the output of a module that moved or went away.
  rmSync('dist', { recursive: true, force: true });
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], {
    stdio: 'inherit',
  });
  execFileSync(process.execPath, ['scripts/bundle.mjs'], { stdio: 'inherit' });
}

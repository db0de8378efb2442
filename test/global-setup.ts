// Builds what the suites run: the compiled CLI (dist/) and the native plugin with its sanitizer build.
import { execFileSync } from 'node:child_process';

export default function setup(): void {
  execFileSync('make', ['-s', '-C', 'native', 'all', 'sanitize'], { stdio: 'inherit' });
}

// Files shipped beside the code (package.json, proto/, docs/admission, native/build), found from
// wherever the code runs: src/ under tsx, dist/ as compiled, or dist/bundle/ as bundled and shipped.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let root: string | undefined;

/** The directory holding this package's package.json (the first one above this module). */
export function packageRoot(): string {
  if (root !== undefined) return root;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'package.json'))) return (root = dir);
    const up = dirname(dir);
    if (up === dir) throw new Error(`no package.json above ${fileURLToPath(import.meta.url)}`);
    dir = up;
  }
}

/** A path inside the package, e.g. `packagePath('proto', 'deviceplugin', 'v1beta1', 'api.proto')`. */
export function packagePath(...parts: string[]): string {
  return join(packageRoot(), ...parts);
}

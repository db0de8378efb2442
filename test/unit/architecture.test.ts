// The rooms of src/ and what each may import, as docs/architecture.md draws them: a room imports
// only rooms below it, so no arrow runs back up and no circle forms. A change that needs another
// arrow changes this table and the page together.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

/** Each room of src/ (a folder, or a file at the top) and the rooms it may import. */
const MAY_IMPORT: Readonly<Record<string, readonly string[]>> = {
  cli: [
    'roles',
    'admission',
    'agent',
    'devices',
    'certs',
    'check',
    'cluster',
    'policy',
    'native',
    'config',
    'util',
    'errors',
    'constants',
  ],
  roles: [
    'admission',
    'agent',
    'dra',
    'deviceplugin',
    'devices',
    'kubelet',
    'certs',
    'cluster',
    'config',
    'util',
    'errors',
  ],
  admission: ['certs', 'cluster', 'policy', 'config', 'util', 'errors'],
  // The three node programs side by side (#101): none imports another; all three stand on the
  // device model (devices/) and the kubelet plumbing (kubelet/), which import neither.
  agent: [
    'devices',
    'kubelet',
    'cluster',
    'policy',
    'native',
    'config',
    'util',
    'errors',
    'constants',
  ],
  dra: ['devices', 'kubelet', 'cluster', 'policy', 'config', 'util', 'errors', 'constants'],
  deviceplugin: [
    'devices',
    'kubelet',
    'cluster',
    'policy',
    'config',
    'util',
    'errors',
    'constants',
  ],
  devices: ['policy', 'config', 'util', 'errors', 'constants'],
  kubelet: ['util', 'errors', 'constants'],
  certs: ['cluster', 'util', 'errors'],
  check: ['cluster', 'policy', 'config', 'util', 'errors', 'constants'],
  cluster: ['policy', 'config', 'util', 'errors', 'constants'],
  policy: ['config', 'util', 'constants'],
  native: ['util', 'errors'],
  config: ['util', 'errors', 'constants'],
  util: ['errors'],
  errors: [],
  constants: [],
  types: [],
};

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? sources(join(dir, e.name))
      : e.name.endsWith('.ts')
        ? [join(dir, e.name)]
        : [],
  );
}

/** The files of src/ each file imports (static, `import type` and `import()` alike). */
function imports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:from|import\()\s*'(\.{1,2}\/[^']+)'/g)].map((m) =>
    normalize(join(dirname(file), m[1]!.replace(/\.js$/, '.ts'))),
  );
}

/** src/agent/x.ts → agent; src/errors.ts → errors. */
function roomOf(file: string): string {
  const [first = ''] = relative('src', file).split('/');
  return first.replace(/\.ts$/, '');
}

const files = sources('src');

/** Every import of a room the table does not allow it, as `file → file`. */
function wrongImports(table: Readonly<Record<string, readonly string[]>>): string[] {
  return files.flatMap((f) =>
    imports(f)
      .filter((t) => roomOf(t) !== roomOf(f) && !table[roomOf(f)]!.includes(roomOf(t)))
      .map((t) => `${f} → ${t}`),
  );
}

describe('the rooms of src/', () => {
  it('every room is in the table', () => {
    expect([...new Set(files.map(roomOf))].sort()).toEqual(Object.keys(MAY_IMPORT).sort());
  });

  it('each room imports only the rooms below it', () => {
    expect(wrongImports(MAY_IMPORT)).toEqual([]);
  });

  it("the agent's shared files (duty, events, metrics, host, pod) import none of its rooms", () => {
    const shared = ['duty', 'events', 'metrics', 'host', 'pod'].map((n) => `src/agent/${n}.ts`);
    const wrong = shared.flatMap((f) =>
      imports(f)
        .filter((t) => t.startsWith('src/agent/') && relative('src/agent', t).includes('/'))
        .map((t) => `${f} → ${t}`),
    );
    expect(wrong).toEqual([]);
  });

  it('observe/ only reads: it imports nothing of network/ but the late-apply record name', () => {
    const wrong = files
      .filter((f) => f.startsWith('src/agent/observe/'))
      .flatMap((f) =>
        [...readFileSync(f, 'utf8').matchAll(/import \{([^}]*)\} from '\.\.\/network\/([^']+)'/g)]
          .filter((m) => m[2] !== 'late-apply.js' || m[1]!.trim() !== 'LATE_PREFIX')
          .map((m) => `${f} imports ${m[1]!.trim()} from network/${m[2]}`),
      );
    expect(wrong).toEqual([]);
  });

  it('no module of src/ reaches ICU (toLocaleString, localeCompare, Intl)', () => {
    // Formatting one number with toLocaleString when the policy loaded mapped Node's ICU data into
    // serve: 8.5 MiB more resident, idle (bench/memory). Messages and tables use plain code.
    const icu = /\.toLocale\w*\(|\.localeCompare\(|\bIntl\./;
    expect(files.filter((f) => icu.test(readFileSync(f, 'utf8')))).toEqual([]);
  });

  it('the check can fail: with policy/ allowed nothing, its imports are named', () => {
    const found = wrongImports({ ...MAY_IMPORT, policy: [] });
    expect(found.length).toBeGreaterThan(0);
    expect(found.every((w) => w.startsWith('src/policy/'))).toBe(true);
    expect(found).toContain('src/policy/evaluate.ts → src/constants.ts');
  });
});

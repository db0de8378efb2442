// Which ClusterProfile judges which manifest. One profile among the inputs judges them all (as
// `--profile` does). Several, as in a GitOps tree with a directory per cluster (clusters/prod/,
// clusters/staging/), each judge the files under their own directory, the nearest one winning, as
// .editorconfig or kustomize bases scope by directory.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { resolveView, type ProfileChoice } from '../cluster/offline.js';
import { AppError } from '../errors.js';
import type { ClusterView } from '../policy/types.js';
import type { SourcedObject } from './inputs.js';

/** A ClusterProfile document and the file it came from (`-` for stdin). */
export interface FoundProfile {
  readonly file: string;
  readonly profile: SourcedObject;
}

/** The view for the manifests of a file. */
export type ViewFor = (file: string) => ClusterView;

const STDIN = '-';

function shown(files: readonly string[]): string {
  const names = files.slice(0, 3).map((f) => (f === STDIN ? '<stdin>' : f));
  return names.join(', ') + (files.length > 3 ? `, and ${files.length - 3} more` : '');
}

/**
 * The view per input file. With `--profile`, or at most one profile among the inputs, every file
 * gets the same view. Several: each directory holding one scopes its files; two in one directory,
 * a profile on stdin, or a manifest under none of them is a usage error (exit 2), named before any
 * object is checked.
 */
export function scopeProfiles(
  choice: ProfileChoice,
  found: readonly FoundProfile[],
  files: readonly string[],
): ViewFor {
  if (choice.profileFile || found.length <= 1) {
    const view = resolveView(choice, found[0]?.profile);
    return () => view;
  }
  const byDir = new Map<string, FoundProfile[]>();
  for (const f of found) {
    if (f.file === STDIN)
      throw new AppError(
        'USAGE',
        `a ClusterProfile on stdin among ${found.length} profiles: which files it judges is unclear; give it with --profile`,
      );
    const dir = dirname(resolve(f.file));
    byDir.set(dir, [...(byDir.get(dir) ?? []), f]);
  }
  for (const [, list] of byDir)
    if (list.length > 1)
      throw new AppError(
        'USAGE',
        `more than one ClusterProfile in one directory: ${list.map((p) => p.profile.source).join(', ')}; ` +
          'a directory holds at most one (it judges the manifests under it), or name one with --profile',
      );
  // Each file's nearest profile directory, found once; each directory's view, made once.
  const nearest = (file: string): string | undefined => {
    if (file === STDIN) return undefined;
    for (let dir = dirname(resolve(file)); ; dir = dirname(dir)) {
      if (byDir.has(dir)) return dir;
      if (dirname(dir) === dir) return undefined;
    }
  };
  const dirOf = new Map(files.map((f) => [f, nearest(f)]));
  const orphans = files.filter((f) => dirOf.get(f) === undefined);
  if (orphans.length > 0) {
    const dirs = [...byDir.keys()].map((d) => relative('.', d) || '.');
    throw new AppError(
      'USAGE',
      `${shown(orphans)}: under none of the directories whose ClusterProfile judges it (${dirs.join(', ')}); ` +
        'move it under one, check it in a run of its own, or name a profile with --profile',
    );
  }
  const views = new Map(
    [...byDir].map(([dir, [only]]) => [dir, resolveView(choice, only!.profile)] as const),
  );
  return (file) => views.get(dirOf.get(file)!)!;
}

/** Files that may be manifests, by name (as a directory is read). */
const MANIFEST_FILE = /\.(ya?ml|json)$/;

/** The directories from `path`'s parent up to the repository's top; none outside a repository. */
function dirsUpToRepo(path: string): string[] {
  const above: string[] = [];
  for (let dir = dirname(resolve(path)); ; dir = dirname(dir)) {
    above.push(dir);
    if (existsSync(join(dir, '.git'))) return above;
    if (dirname(dir) === dir) return [];
  }
}

/** The manifest files directly in `dir` (not below it). */
function manifestsIn(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names
    .sort()
    .filter((n) => MANIFEST_FILE.test(n))
    .map((n) => join(dir, n))
    .filter((f) => {
      try {
        return statSync(f).isFile();
      } catch {
        return false; // gone meanwhile
      }
    });
}

/**
 * The manifest files directly in each directory above the given paths, up to the repository's top
 * (the nearest directory holding .git), where a ClusterProfile judging them may sit: `check
 * examples/valid/` is judged by examples/cluster-profile.yaml as `check examples/` is. Outside a
 * repository nothing above the paths is read. Each directory once, the paths' own never.
 */
export function profileCandidatesAbove(paths: readonly string[]): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const p of paths) {
    if (p === STDIN || !existsSync(p)) continue;
    for (const dir of dirsUpToRepo(p)) {
      if (seen.has(dir)) continue;
      seen.add(dir);
      out.push(...manifestsIn(dir));
    }
  }
  return out;
}

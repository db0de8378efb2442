// `erdma-smcr check`: runs the admission policy over manifests offline, for people and CI. This
// file runs it over paths; ./judge.ts judges one object, ./notices.ts words what the run tells.
import type { PolicyConfig } from '../config/schema.js';
import type { ProfileChoice } from '../cluster/offline.js';
import { PROFILE_KIND } from '../cluster/profile.js';
import type { ClusterView } from '../policy/types.js';
import {
  expandPaths,
  type SpecialFile,
  inputReader,
  visitInputs,
  type InputError,
  type NotObject,
  type SourcedObject,
} from './inputs.js';
import { profileCandidatesAbove, scopeProfiles, type FoundProfile } from './profiles.js';
import { resolve } from 'node:path';
import { checkOne, skipped, type CheckResult, type Keep } from './judge.js';
import { runNotices } from './notices.js';

export { CHECK_NOTE, skipped, type CheckResult, type Keep, type PodPreview } from './judge.js';

export interface CheckReport {
  readonly results: readonly CheckResult[];
  /** What the run decided that a person should know (which profile was not used), for stderr. */
  readonly notices?: readonly string[];
  /** Inputs that could not be read or parsed (the exit code is then 2, after every other file was checked). */
  readonly errors: readonly InputError[];
  readonly summary: {
    readonly objects: number;
    readonly allowed: number;
    readonly denied: number;
    /** Warnings over all objects (--fail-on-warn makes them fail the run). */
    readonly warnings: number;
    /** Allowed objects the policy does not apply to (no SMC-R annotation, no RDMA device), without warnings. */
    readonly skipped: number;
    readonly errors: number;
  };
}

/** How `check` runs over paths (checkPaths). */
export interface CheckPathsOptions {
  readonly stdin: () => string;
  /** --profile and --nodes. */
  readonly choice: ProfileChoice;
  readonly config: PolicyConfig;
  readonly keep: Keep;
  /** Given: each result goes here as soon as it is known and is not kept (the report's results stay empty). */
  readonly onResult?: (r: CheckResult) => void;
  /** Files whose path (as found under the paths given) matches one of these are not read (--exclude). */
  readonly exclude?: readonly RegExp[];
  /**
   * Documents that are not Kubernetes objects (a Grafana dashboard, a Prometheus rule file, a
   * kustomize JSON patch: what real manifest trees hold beside their objects): `skip` them with one
   * note for the run, or make each an `error` (exit 2), as before (--not-objects).
   */
  readonly notObjects?: 'skip' | 'error';
}

function report(
  results: CheckResult[],
  errors: readonly InputError[],
  counts: { objects: number; denied: number; warnings: number; skipped: number },
): CheckReport {
  const { objects, denied, warnings } = counts;
  return {
    results,
    errors,
    summary: {
      objects,
      allowed: objects - denied,
      denied,
      warnings,
      skipped: counts.skipped,
      errors: errors.length,
    },
  };
}

/** A text that may hold a ClusterProfile document (files without one are not parsed for it). */
const MAY_HOLD_PROFILE = new RegExp(PROFILE_KIND);

/**
 * `check` over paths, file by file: memory holds one file's objects and the (small) results, not
 * the whole tree. ClusterProfiles among the inputs are found first, in the files that mention them
 * (./profiles.ts says which judges which file).
 */
export function checkPaths(paths: readonly string[], o: CheckPathsOptions): CheckReport {
  const { stdin, choice, config, keep, onResult, exclude = [], notObjects = 'skip' } = o;
  const errors: InputError[] = [];
  const specials: SpecialFile[] = [];
  const files = expandPaths(paths, errors, specials).filter(
    (f) => f === '-' || !exclude.some((re) => re.test(f)),
  );
  let stdinText: string | undefined;
  const readStdin = (): string => (stdinText ??= stdin());
  const read = inputReader();
  const profiles: FoundProfile[] = [];
  const collect = (objs: SourcedObject[], file: string): void => {
    for (const o of objs) if (o.object.kind === PROFILE_KIND) profiles.push({ file, profile: o });
  };
  // Without --profile the inputs' profiles are found first, in the files that mention one (each
  // such file is read twice); with it, the main pass notes them as it goes, for the notice.
  if (!choice.profileFile) visitInputs(files, readStdin, collect, [], MAY_HOLD_PROFILE, read);
  // A ClusterProfile above the paths, in the same repository, judges them too (#70); one that
  // cannot be read there is none of this run's business.
  const inputs = new Set(files.map((f) => resolve(f)));
  const above = profileCandidatesAbove(paths).filter((f) => !inputs.has(f));
  visitInputs(above, () => '', collect, [], MAY_HOLD_PROFILE);
  const viewFor = scopeProfiles(choice, choice.profileFile ? [] : profiles, files);
  const results: CheckResult[] = [];
  /** SMC-R objects judged without a node list (a note for the run, not a warning per object). */
  let blind = 0;
  const skippedDocs: NotObject[] = [];
  let objects = 0;
  let denied = 0;
  let skips = 0;
  let warnings = 0;
  visitInputs(
    files,
    readStdin,
    (objs, file) => {
      if (objs.length === 0) return;
      const view = viewFor(file);
      for (const o of objs) {
        if (o.object.kind === PROFILE_KIND) {
          if (choice.profileFile) profiles.push({ file, profile: o });
          continue;
        }
        const r = checkOne(o, view, config, keep);
        if (r.annotated && !view.nodesKnown) blind += 1;
        objects += 1;
        warnings += r.warnings.length;
        if (!r.allowed) denied += 1;
        if (skipped(r)) skips += 1;
        if (onResult) onResult(r);
        else results.push(r);
      }
    },
    errors,
    undefined,
    read,
    notObjects === 'skip' ? skippedDocs : undefined,
  );
  const notices = runNotices(choice, profiles, skippedDocs, specials, exclude, blind);
  // A gate that checked nothing must not pass, in any format: an empty or mistyped tree, an
  // empty stdin, a tree of nothing but skipped documents is an input error of its own (#70).
  if (objects === 0 && errors.length === 0)
    for (const p of paths) {
      const name = p === '-' ? '<stdin>' : p;
      errors.push({
        source: name,
        code: 'NOTHING_TO_CHECK',
        message: `nothing to check: no Kubernetes objects in ${name}`,
      });
    }
  return { ...report(results, errors, { objects, denied, warnings, skipped: skips }), notices };
}

export function runCheck(
  objects: readonly SourcedObject[],
  view: ClusterView,
  config: PolicyConfig,
  errors: readonly InputError[] = [],
): CheckReport {
  const results = objects.map((o) => checkOne(o, view, config, { patch: true }));
  return report(results, errors, {
    objects: results.length,
    denied: results.filter((r) => !r.allowed).length,
    warnings: results.reduce((n, r) => n + r.warnings.length, 0),
    skipped: results.filter(skipped).length,
  });
}

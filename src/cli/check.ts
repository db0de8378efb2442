// `erdma-smcr check`: runs the admission policy over manifests offline, for people and CI.
import type { Operation } from 'fast-json-patch';
import type { PolicyConfig } from '../config/schema.js';
import {
  DEFAULT_PROFILE,
  loadNodesFile,
  loadProfileFile,
  parseProfile,
  PROFILE_KIND,
  viewFromProfile,
  type Profile,
} from '../cluster/profile.js';
import { AppError } from '../errors.js';
import { evaluate } from '../policy/evaluate.js';
import { isObject } from '../policy/locate.js';
import type { ClusterView, Denial } from '../policy/types.js';
import type { SourcedObject } from './inputs.js';

export interface CheckResult {
  readonly source: string;
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
  readonly allowed: boolean;
  readonly denials: readonly Denial[];
  readonly warnings: readonly string[];
  readonly patch: readonly Operation[];
}

export interface CheckReport {
  readonly results: readonly CheckResult[];
  readonly summary: { readonly objects: number; readonly allowed: number; readonly denied: number };
}

export interface ProfileChoice {
  readonly profileFile?: string;
  readonly nodesFile?: string;
}

function describe(obj: Record<string, unknown>): { kind: string; namespace: string; name: string } {
  const md = isObject(obj.metadata) ? obj.metadata : {};
  const name =
    typeof md.name === 'string' ? md.name : typeof md.generateName === 'string' ? `${md.generateName}*` : '(unnamed)';
  return {
    kind: typeof obj.kind === 'string' ? obj.kind : '(no kind)',
    namespace: typeof md.namespace === 'string' ? md.namespace : '',
    name,
  };
}

/** Splits ClusterProfile documents out of the inputs. More than one is an input error. */
export function splitProfiles(inputs: readonly SourcedObject[]): { objects: SourcedObject[]; profile?: SourcedObject } {
  const profiles = inputs.filter((i) => i.object.kind === PROFILE_KIND);
  if (profiles.length > 1) {
    throw new AppError('USAGE', `more than one ClusterProfile among the inputs: ${profiles.map((p) => p.source).join(', ')}`);
  }
  return { objects: inputs.filter((i) => i.object.kind !== PROFILE_KIND), profile: profiles[0] };
}

/** The view: --profile wins over a ClusterProfile among the inputs, which wins over the embedded default. */
export function resolveView(choice: ProfileChoice, inline?: SourcedObject): ClusterView {
  let profile: Profile = DEFAULT_PROFILE;
  if (choice.profileFile) profile = loadProfileFile(choice.profileFile);
  else if (inline) profile = parseProfile(inline.object, inline.source);
  const nodes = choice.nodesFile ? loadNodesFile(choice.nodesFile) : undefined;
  return viewFromProfile(profile, nodes);
}

export function runCheck(objects: readonly SourcedObject[], view: ClusterView, config: PolicyConfig): CheckReport {
  const results = objects.map(({ source, object }): CheckResult => {
    const r = evaluate(object, view, config);
    return { source, ...describe(object), allowed: r.allowed, denials: r.denials, warnings: r.warnings, patch: r.patch };
  });
  const denied = results.filter((r) => !r.allowed).length;
  return { results, summary: { objects: results.length, allowed: results.length - denied, denied } };
}

// The cluster view without a cluster: the policy's view from a ClusterProfile (a file, or one
// among the manifests `check` reads) and a node list, for `check`, `review` and `serve --cluster
// offline`.
import type { Config } from '../config/schema.js';
import type { ClusterView, JsonObject } from '../policy/types.js';
import {
  DEFAULT_PROFILE,
  loadNodesFile,
  loadProfileFile,
  parseProfile,
  viewFromProfile,
  type Profile,
} from './profile.js';
import { StaticViewSource } from './view.js';

/** A ClusterProfile found among the manifests, with where it was read (`file:line`). */
export interface InlineProfile {
  readonly source: string;
  readonly object: JsonObject;
}

export interface ProfileChoice {
  readonly profileFile?: string;
  readonly nodesFile?: string;
}

/** The view: --profile wins over a ClusterProfile among the inputs, which wins over the embedded default. */
export function resolveView(choice: ProfileChoice, inline?: InlineProfile): ClusterView {
  let profile: Profile = DEFAULT_PROFILE;
  if (choice.profileFile) profile = loadProfileFile(choice.profileFile);
  else if (inline) profile = parseProfile(inline.object, inline.source);
  const file = choice.nodesFile ? loadNodesFile(choice.nodesFile) : undefined;
  return viewFromProfile(profile, file?.nodes, file?.serviceNetworks);
}

/** The offline view from the configured profile and node list (cluster.profile, cluster.nodes). */
export function offlineView(config: Readonly<Config>): StaticViewSource {
  return new StaticViewSource(
    resolveView({
      ...(config.cluster.profile ? { profileFile: config.cluster.profile } : {}),
      ...(config.cluster.nodes ? { nodesFile: config.cluster.nodes } : {}),
    }),
  );
}

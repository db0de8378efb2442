// What a `check` run tells a person beside the verdicts: unused profiles, skipped documents and
// special files, node checks skipped for want of a node list.
import type { ProfileChoice } from '../cluster/offline.js';
import type { NotObject, SpecialFile } from './inputs.js';
import type { FoundProfile } from './profiles.js';
import { resolve } from 'node:path';

/** The run's notices: unused profiles, skipped documents and special files, unknown nodes. */
export function runNotices(
  choice: ProfileChoice,
  profiles: readonly FoundProfile[],
  skippedDocs: readonly NotObject[],
  specials: readonly SpecialFile[],
  exclude: readonly RegExp[],
  blind: number,
): string[] {
  const unused = choice.profileFile
    ? profiles.filter((p) => resolve(p.file) !== resolve(choice.profileFile!))
    : [];
  const noted = specials.filter((f) => !exclude.some((re) => re.test(f.path)));
  return [
    ...(unused.length > 0
      ? [
          `--profile ${choice.profileFile} judges every manifest; the ClusterProfile${unused.length > 1 ? 's' : ''} in ${unused.map((p) => p.profile.source).join(', ')} ${unused.length > 1 ? 'are' : 'is'} not used`,
        ]
      : []),
    ...(skippedDocs.length > 0 ? [notObjectsNote(skippedDocs)] : []),
    ...(noted.length > 0 ? [specialFilesNote(noted)] : []),
    ...(blind > 0
      ? [
          `node list unknown: the node checks (kernel, driver mode, capability) were skipped for ${blind} SMC-R object(s); give the cluster's nodes with --profile or --nodes to run them`,
        ]
      : []),
  ];
}

/** One note for the files of the walk that are not regular files: how many, which, what each is. */
function specialFilesNote(files: readonly SpecialFile[]): string {
  const shown = files
    .slice(0, 5)
    .map((f) => `${f.path} (${f.kind})`)
    .join(', ');
  const more = files.length > 5 ? ` and ${files.length - 5} more` : '';
  return `skipped ${files.length} file(s) in the directories that are not regular files: ${shown}${more}; to check what one holds, name it as an input (a named pipe is read as stdin is) or pass it on stdin with -`;
}

/** One note for the documents skipped as not Kubernetes objects: how many, in which files. */
function notObjectsNote(docs: readonly NotObject[]): string {
  const files = [...new Set(docs.map((d) => d.source.replace(/:\d+(#.*)?$/, '')))];
  const shown = files.slice(0, 5).join(', ');
  const more = files.length > 5 ? ` and ${files.length - 5} more` : '';
  return `skipped ${docs.length} document(s) that are not Kubernetes objects (no apiVersion and kind) in ${shown}${more}; --not-objects error makes each an input error`;
}

// YAML and JSON reading for every input (manifests, profiles, config), with file:line in errors.
// js-yaml: about 7× faster than the `yaml` package here, which matters for `check` on big trees.
import jsyaml from 'js-yaml';
import { AppError } from './errors.js';

/** The loader's state carries the documents read so far; @types/js-yaml leaves it out. */
interface LoaderState {
  readonly documents: readonly unknown[];
}

export interface YamlDocument {
  /** 1-based line where the document's content starts. */
  readonly line: number;
  readonly value: unknown;
}

/** Parses every document of a YAML (or JSON) text. Syntax errors name `name:line:column`. */
export function parseYamlDocuments(text: string, name: string): YamlDocument[] {
  const lines: number[] = [];
  let values: unknown[];
  try {
    values = [];
    jsyaml.loadAll(text, (doc) => values.push(doc), {
      filename: name,
      // The first node opened in each document tells where that document starts.
      listener(event, state) {
        const docs = (state as unknown as LoaderState).documents.length;
        if (event === 'open' && lines.length === docs) lines.push(state.line + 1);
      },
    });
  } catch (err) {
    if (err instanceof jsyaml.YAMLException) {
      const mark = err.mark as { line: number; column: number } | undefined;
      const where = mark ? `:${mark.line + 1}:${mark.column + 1}` : '';
      throw new AppError('INPUT_PARSE', `${name}${where}: invalid YAML: ${err.reason}`);
    }
    throw err;
  }
  return values.map((value, i) => ({ line: lines[i] ?? 1, value }));
}

/** The first non-empty document of a text, or undefined. */
export function parseYamlFirst(text: string, name: string): unknown {
  return parseYamlDocuments(text, name).find((d) => d.value !== null && d.value !== undefined)?.value;
}

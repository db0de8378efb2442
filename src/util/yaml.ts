// YAML and JSON reading for every input (manifests, profiles, config), with file:line in errors.
// js-yaml: about 7× faster than the `yaml` package here, which matters for `check` on big trees.
// Plain scalars resolve as kubectl resolves them (sigs.k8s.io/yaml over go-yaml v2, YAML 1.1), not
// as YAML 1.2 does, so `check` sees the object the API server will see.
import jsyaml from 'js-yaml';
import { AppError } from '../errors.js';

const TRUE_WORDS = new Set('y Y yes Yes YES true True TRUE on On ON'.split(' '));
const FALSE_WORDS = new Set('n N no No NO false False FALSE off Off OFF'.split(' '));

/** YAML 1.1 booleans, as go-yaml v2 reads them: `hostNetwork: yes` is true for kubectl. */
const boolType = new jsyaml.Type('tag:yaml.org,2002:bool', {
  kind: 'scalar',
  resolve: (data: string) => TRUE_WORDS.has(data) || FALSE_WORDS.has(data),
  construct: (data: string) => TRUE_WORDS.has(data),
  predicate: (v: unknown) => typeof v === 'boolean',
  represent: (v: object) => String(v),
});

/** go-yaml v2 tries a number only when a scalar starts with a digit or a sign (or a dot, for floats). */
function numberLike(data: string): boolean {
  const c = data.charCodeAt(0);
  return (c >= 0x30 && c <= 0x39) || c === 0x2b || c === 0x2d;
}

/**
 * Integers as go-yaml v2 reads them: underscores dropped, then Go's base prefixes, where a
 * leading 0 means octal (`defaultMode: 0644` is 420).
 */
const INT = /^[-+]?(?:0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)$/;
const INT_BASES: Readonly<Record<string, number>> = { '0x': 16, '0o': 8, '0b': 2 };

function goInt(data: string): number {
  const plain = data.replace(/_/g, '');
  const sign = plain.startsWith('-') ? -1 : 1;
  const digits = plain.replace(/^[-+]/, '');
  const base = INT_BASES[digits.slice(0, 2).toLowerCase()];
  if (base !== undefined) return sign * parseInt(digits.slice(2), base);
  return sign * parseInt(digits, digits.length > 1 && digits.startsWith('0') ? 8 : 10);
}

const intType = new jsyaml.Type('tag:yaml.org,2002:int', {
  kind: 'scalar',
  resolve: (data: string) => numberLike(data) && INT.test(data.replace(/_/g, '')),
  construct: goInt,
  predicate: (v: unknown) => typeof v === 'number' && Number.isInteger(v),
  represent: (v: object) => String(v),
});

/** go-yaml v2's float forms: its YAML-style decimal (underscores dropped), a leading dot, ±.inf, .nan. */
const DECIMAL_FLOAT = /^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$/;
/** A leading dot goes to Go's ParseFloat as it is, which takes an underscore between two digits. */
const DOT_FLOAT = /^\.[0-9](?:_?[0-9])*(?:[eE][-+]?[0-9](?:_?[0-9])*)?$/;
const SPECIAL_FLOATS: ReadonlyMap<string, number> = new Map([
  ...['.inf', '.Inf', '.INF'].flatMap((w): [string, number][] => [
    [w, Infinity],
    [`+${w}`, Infinity],
    [`-${w}`, -Infinity],
  ]),
  ...['.nan', '.NaN', '.NAN'].map((w): [string, number] => [w, NaN]),
]);

function floatText(data: string): string | undefined {
  if (data.charCodeAt(0) === 0x2e) return DOT_FLOAT.test(data) ? data.replace(/_/g, '') : undefined;
  if (!numberLike(data)) return undefined;
  const plain = data.replace(/_/g, '');
  return DECIMAL_FLOAT.test(plain) ? plain : undefined;
}

const floatType = new jsyaml.Type('tag:yaml.org,2002:float', {
  kind: 'scalar',
  // A finite value only: Go's ParseFloat refuses 1e400, and go-yaml then keeps the string.
  resolve: (data: string) =>
    SPECIAL_FLOATS.has(data) || Number.isFinite(Number(floatText(data) ?? 'NaN')),
  construct: (data: string) => SPECIAL_FLOATS.get(data) ?? Number(floatText(data)),
  predicate: (v: unknown) => typeof v === 'number' && !Number.isInteger(v),
  // As go-yaml writes them; a number the reader made is finite or one of these.
  represent: (v: object) => {
    const n = Number(v);
    if (Number.isNaN(n)) return '.nan';
    if (!Number.isFinite(n)) return n > 0 ? '.inf' : '-.inf';
    return String(n);
  },
});

/** Timestamps stay strings: go-yaml v2 keeps them so when the target is untyped, as kubectl's is. */
const timestampType = new jsyaml.Type('tag:yaml.org,2002:timestamp', {
  kind: 'scalar',
  construct: (data: string) => data,
});

/** js-yaml 4 exports its built-in types as `types`; @types/js-yaml does not declare it. */
const t = (
  jsyaml as unknown as {
    types: Record<'null' | 'merge' | 'binary' | 'omap' | 'pairs' | 'set', jsyaml.Type>;
  }
).types;

/** The schema kubectl effectively reads manifests with. */
export const KUBE_SCHEMA = jsyaml.FAILSAFE_SCHEMA.extend({
  implicit: [t.null, boolType, intType, floatType, t.merge],
  explicit: [t.binary, t.omap, t.pairs, t.set, timestampType],
});

/** The loader's state carries the documents read so far; @types/js-yaml leaves it out. */
interface LoaderState {
  readonly documents: readonly unknown[];
}

export interface YamlDocument {
  /** 1-based line where the document's content starts. */
  readonly line: number;
  readonly value: unknown;
}

/**
 * Parses every document of a YAML (or JSON) text. Syntax errors name `name:line:column`.
 * `lastKeyWins`: a key repeated in one map keeps its last value, as kubectl reads manifests
 * (go-yaml v2 under sigs.k8s.io/yaml); otherwise a repeated key is an error (configuration files).
 */
export function parseYamlDocuments(
  text: string,
  name: string,
  lastKeyWins = false,
): YamlDocument[] {
  const lines: number[] = [];
  let values: unknown[];
  try {
    values = [];
    jsyaml.loadAll(text, (doc) => values.push(doc), {
      filename: name,
      schema: KUBE_SCHEMA,
      json: lastKeyWins,
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
  return parseYamlDocuments(text, name).find((d) => d.value !== null && d.value !== undefined)
    ?.value;
}

/**
 * An object as YAML that kubectl reads back as the same object: strings that kubectl's YAML 1.1
 * would read as something else (`yes`, `0644`, `~`) are quoted, long strings are not folded.
 */
export function toYaml(value: unknown): string {
  return jsyaml.dump(value, { schema: KUBE_SCHEMA, lineWidth: -1, noRefs: true });
}

// Builds the frozen configuration: flags over environment over file over defaults, one schema.
import { readFileSync } from 'node:fs';
import '../util/zod.js';
import * as z from 'zod/mini';
import { configSchema, type Config } from './schema.js';
import { AppError } from '../errors.js';
import { deepFreeze } from '../util/freeze.js';
import { parseYamlFirst } from '../util/yaml.js';

/** Environment variables we read, each mapped to a dotted config path. */
export const ENV_VARS: Readonly<
  Record<string, { path: string; type: 'string' | 'number' | 'boolean' }>
> = {
  ERDMA_SMCR_LOG_LEVEL: { path: 'logLevel', type: 'string' },
  ERDMA_SMCR_CONFIG_PROFILE: { path: 'cluster.profile', type: 'string' },
  ERDMA_SMCR_NODES: { path: 'cluster.nodes', type: 'string' },
  ERDMA_SMCR_HOST: { path: 'webhook.host', type: 'string' },
  ERDMA_SMCR_PORT: { path: 'webhook.port', type: 'number' },
  ERDMA_SMCR_METRICS_PORT: { path: 'webhook.metricsPort', type: 'number' },
  ERDMA_SMCR_METRICS_HOST: { path: 'webhook.metricsHost', type: 'string' },
  ERDMA_SMCR_CERT_DIR: { path: 'webhook.certDir', type: 'string' },
  ERDMA_SMCR_SHUTDOWN_DELAY_MS: { path: 'webhook.shutdownDelayMs', type: 'number' },
  ERDMA_SMCR_SERVICE_NAME: { path: 'webhook.serviceName', type: 'string' },
  ERDMA_SMCR_NAMESPACE: { path: 'webhook.namespace', type: 'string' },
  ERDMA_SMCR_CERT_SOURCE: { path: 'webhook.certSource', type: 'string' },
  ERDMA_SMCR_CLUSTER_SOURCE: { path: 'cluster.source', type: 'string' },
  ERDMA_SMCR_NODE_NAME: { path: 'agent.nodeName', type: 'string' },
  ERDMA_SMCR_AGENT_METRICS_PORT: { path: 'agent.metricsPort', type: 'number' },
  ERDMA_SMCR_AGENT_DEVICE_PLUGIN: { path: 'agent.devicePlugin', type: 'boolean' },
  ERDMA_SMCR_RESOURCE_NAME: { path: 'policy.resourceName', type: 'string' },
  ERDMA_SMCR_DISABLE_IPV6: { path: 'policy.disableIPv6', type: 'boolean' },
  ERDMA_SMCR_PRELOAD_IMAGE: { path: 'policy.preloadImage', type: 'string' },
  ERDMA_SMCR_HOST_ROOT: { path: 'agent.hostRoot', type: 'string' },
  ERDMA_SMCR_KUBELET_DIR: { path: 'agent.kubeletDir', type: 'string' },
  ERDMA_SMCR_SLOTS_PER_DEVICE: { path: 'agent.slotsPerDevice', type: 'number' },
};

type Tree = Record<string, unknown>;

function setPath(tree: Tree, dotted: string, value: unknown): void {
  const keys = dotted.split('.');
  let node = tree;
  for (const key of keys.slice(0, -1)) {
    const next = node[key];
    if (typeof next !== 'object' || next === null || Array.isArray(next)) node[key] = {};
    node = node[key] as Tree;
  }
  node[keys[keys.length - 1] as string] = value;
}

function deepMerge(base: Tree, over: Tree): Tree {
  const out: Tree = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const prev = out[key];
    const bothObjects =
      typeof value === 'object' &&
      value !== null &&
      !Array.isArray(value) &&
      typeof prev === 'object' &&
      prev !== null &&
      !Array.isArray(prev);
    out[key] = bothObjects ? deepMerge(prev as Tree, value as Tree) : value;
  }
  return out;
}

function coerce(name: string, raw: string, type: 'string' | 'number' | 'boolean'): unknown {
  if (type === 'string') return raw;
  if (type === 'number') {
    const n = Number(raw);
    if (raw.trim() === '' || !Number.isFinite(n))
      throw new AppError('CONFIG_INVALID', `${name}=${raw} is not a number`);
    return n;
  }
  if (/^(1|true|yes)$/i.test(raw)) return true;
  if (/^(0|false|no)$/i.test(raw)) return false;
  throw new AppError('CONFIG_INVALID', `${name}=${raw} is not a boolean (true/false)`);
}

function fromEnv(env: Readonly<Record<string, string | undefined>>): Tree {
  const tree: Tree = {};
  for (const [name, spec] of Object.entries(ENV_VARS)) {
    const raw = env[name];
    if (raw !== undefined && raw !== '') setPath(tree, spec.path, coerce(name, raw, spec.type));
  }
  return tree;
}

/** The line of the key at `path` in a YAML file's text: each key searched for below its parent's. */
function lineOf(text: string, path: readonly PropertyKey[]): number | undefined {
  const lines = text.split('\n');
  let from = 0;
  let found: number | undefined;
  for (const key of path) {
    if (typeof key !== 'string') break;
    const re = new RegExp(`^\\s*["']?${key.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}["']?\\s*:`);
    const i = lines.findIndex((l, n) => n >= from && re.test(l));
    if (i < 0) break;
    found = i + 1;
    from = i + 1;
  }
  return found;
}

/** Edit distance, for "did you mean" (keys are short). */
export function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++)
      cur[j] = Math.min(
        prev[j]! + 1,
        cur[j - 1]! + 1,
        prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    prev = cur;
  }
  return prev[b.length]!;
}

/** The known key nearest to `key` at `path` (by the defaults), if one is near enough to be meant. */
function meant(key: string, path: readonly PropertyKey[]): string | undefined {
  let node: unknown = configSchema.parse({});
  for (const k of path) node = (node as Record<PropertyKey, unknown> | undefined)?.[k];
  if (node === null || typeof node !== 'object') return undefined;
  const best = Object.keys(node)
    .map((k) => ({ k, d: distance(key.toLowerCase(), k.toLowerCase()) }))
    .sort((x, y) => x.d - y.d)[0];
  // Two edits (a swapped pair of letters is two) for keys of four letters or more, one below.
  return best && best.d <= (key.length >= 4 ? 2 : 1) ? best.k : undefined;
}

/**
 * One line per problem, each naming the setting and, when the config file sets it, the file and
 * line; an unknown key with the key it most likely meant (#70).
 */
function problems(error: z.core.$ZodError, file?: { name: string; text: string }): string[] {
  const where = (path: readonly PropertyKey[]): string => {
    const line = file ? lineOf(file.text, path) : undefined;
    return line ? `${file!.name}:${line}: ` : '';
  };
  return error.issues.flatMap((issue) => {
    if (issue.code === 'unrecognized_keys')
      return issue.keys.map((key) => {
        const full = [...issue.path, key];
        const guess = meant(key, issue.path);
        return `${where(full)}${full.join('.')}: unknown setting${guess ? `; did you mean ${[...issue.path, guess].join('.')}?` : ''}`;
      });
    return [`${where(issue.path)}${issue.path.join('.')}: ${issue.message}`];
  });
}

function fromFile(file: string): Tree {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new AppError(
      'CONFIG_INVALID',
      `cannot read config file ${file}: ${(err as Error).message}`,
    );
  }
  const doc = parseYamlFirst(text, file);
  if (doc === null || doc === undefined) return {};
  if (typeof doc !== 'object' || Array.isArray(doc)) {
    throw new AppError('CONFIG_INVALID', `config file ${file} must hold a mapping`);
  }
  return doc as Tree;
}

export interface ConfigSources {
  /** Path of a YAML/JSON config file, if any. */
  readonly file?: string;
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Flag values as dotted paths (`webhook.port`) → value; undefined entries are ignored. */
  readonly flags?: Readonly<Record<string, unknown>>;
}

/** Loads, validates and freezes the configuration. Throws AppError(CONFIG_INVALID) with every problem. */
export function loadConfig(sources: ConfigSources = {}): Readonly<Config> {
  let tree: Tree = {};
  let file: { name: string; text: string } | undefined;
  if (sources.file) {
    tree = deepMerge(tree, fromFile(sources.file));
    file = { name: sources.file, text: readFileSync(sources.file, 'utf8') };
  }
  if (sources.env) tree = deepMerge(tree, fromEnv(sources.env));
  const flagTree: Tree = {};
  for (const [path, value] of Object.entries(sources.flags ?? {})) {
    if (value !== undefined) setPath(flagTree, path, value);
  }
  tree = deepMerge(tree, flagTree);
  const parsed = configSchema.safeParse(tree);
  if (!parsed.success) {
    const lines = problems(parsed.error, file);
    throw new AppError(
      'CONFIG_INVALID',
      lines.length === 1
        ? `invalid configuration: ${lines[0]}`
        : `invalid configuration:\n${lines.map((l) => `  ${l}`).join('\n')}`,
    );
  }
  return deepFreeze(parsed.data);
}

/** The defaults alone, frozen. */
export function defaultConfig(): Readonly<Config> {
  return loadConfig();
}

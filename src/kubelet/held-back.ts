// What the device plugin holds back, in a host file the agent reads: the device plugin has no API
// access (manifests/base/device-plugin.yaml), the agent says it on the Node (a label, an Event).
// {"aliyun/erdma": {"others": ["<their IDs>"...], "since": "<ISO time>"}}; a resource served is absent.
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { writeAtomic } from '../util/fs.js';

export type HeldBack = Record<
  string,
  { readonly others: readonly string[]; readonly since: string }
>;

export function readHeldBack(file: string): HeldBack {
  try {
    const doc = JSON.parse(readFileSync(file, 'utf8')) as unknown;
    return doc && typeof doc === 'object' && !Array.isArray(doc) ? (doc as HeldBack) : {};
  } catch {
    return {};
  }
}

/** Records (others given) or clears a resource, written whole so the agent never reads half of it. */
export function writeHeldBack(
  file: string,
  resource: string,
  others: readonly string[] | undefined,
): void {
  const state = readHeldBack(file);
  if (others) state[resource] = { others: others.slice(0, 8), since: new Date().toISOString() };
  else delete state[resource];
  mkdirSync(dirname(file), { recursive: true });
  writeAtomic(file, JSON.stringify(state), 0o644);
}

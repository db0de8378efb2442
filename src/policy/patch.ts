// The JSON Patch from an object to its copy-on-descend copy (mutate.ts), without a general diff.
//
// The copy shares every subtree a mutation did not descend into, so only the containers on a
// changed path differ by identity. This walks those alone and emits exactly the operations
// fast-json-patch's compare() emits for the same pair, in the same order (test/policy/patch.test.ts
// checks that on generated objects and mutations): per container, the changed existing keys in
// reverse order (descending into containers of the same shape, else "replace"; "remove" for
// keys gone), then, when keys were removed or added, an "add" per new key in insertion order.
// Unlike compare(), values are not deep-cloned through a JSON round trip: they are the copy's
// own, fresh from the mutation, and the caller serialises the patch without changing either.
import type { Operation } from './types.js';

type Container = Record<string, unknown> | unknown[];

function isContainer(v: unknown): v is Container {
  return typeof v === 'object' && v !== null;
}

/** RFC 6901: "~" becomes "~0" and "/" becomes "~1". */
function escapeToken(key: string): string {
  return key.includes('~') || key.includes('/') ? key.replace(/~/g, '~0').replace(/\//g, '~1') : key;
}

function keysOf(v: Container): string[] {
  if (!Array.isArray(v)) return Object.keys(v);
  const keys = new Array<string>(v.length);
  for (let i = 0; i < v.length; i++) keys[i] = String(i);
  return keys;
}

function has(v: Container, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(v, key);
}

/** The operations for one key of `before`, in compare()'s way; true when the key is gone. */
function walkKey(before: Container, after: Container, key: string, ops: Operation[], path: string): boolean {
  const oldVal = (before as Record<string, unknown>)[key];
  const newVal = (after as Record<string, unknown>)[key];
  const afterIsArray = Array.isArray(after);
  if (has(after, key) && !(newVal === undefined && oldVal !== undefined && !afterIsArray)) {
    if (oldVal === newVal) return false; // shared: most keys
    const at = `${path}/${escapeToken(key)}`;
    if (isContainer(oldVal) && isContainer(newVal) && Array.isArray(oldVal) === Array.isArray(newVal)) walk(oldVal, newVal, ops, at);
    else ops.push({ op: 'replace', path: at, value: newVal });
    return false;
  }
  if (Array.isArray(before) === afterIsArray) {
    ops.push({ op: 'remove', path: `${path}/${escapeToken(key)}` });
    return true;
  }
  ops.push({ op: 'replace', path, value: after });
  return false;
}

function walk(before: Container, after: Container, ops: Operation[], path: string): void {
  if (before === after) return;
  const oldKeys = keysOf(before);
  const newKeys = keysOf(after);
  let removed = false;
  for (let i = oldKeys.length - 1; i >= 0; i--) {
    if (walkKey(before, after, oldKeys[i]!, ops, path)) removed = true;
  }
  if (!removed && newKeys.length === oldKeys.length) return;
  const a = after as Record<string, unknown>;
  for (const key of newKeys) {
    if (!has(before, key) && a[key] !== undefined) ops.push({ op: 'add', path: `${path}/${escapeToken(key)}`, value: a[key] });
  }
}

/** The operations turning `original` into `copy`, where `copy` was made from it copy-on-descend. */
export function patchOfCopy(original: object, copy: object): Operation[] {
  const ops: Operation[] = [];
  walk(original as Container, copy as Container, ops, '');
  return ops;
}


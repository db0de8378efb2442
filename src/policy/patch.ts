// The JSON Patch from an object to its copy-on-descend copy (mutate.ts), without a general diff.
//
// The copy shares every subtree a mutation did not descend into, so only the containers on a
// changed path differ by identity. This walks those alone and emits exactly the operations
// fast-json-patch's compare() emits for the same pair, in the same order (test/unit/policy/patch.test.ts
// checks that on generated objects and mutations): per container, the changed existing keys in
// reverse order (descending into containers of the same shape, else "replace"; "remove" for
// keys gone), then, when keys were removed or added, an "add" per new key in insertion order.
// Unlike compare(), values are not deep-cloned through a JSON round trip: they are the copy's
// own, fresh from the mutation (or constants shared frozen), and the caller serialises the patch
// without changing either. patchJson serialises it, byte for byte as JSON.stringify; the
// admission response's base64 of it is src/admission/review.ts's encodePatch.
import { deepFreeze } from '../util/freeze.js';
import type { PatchOperation } from './types.js';

type Container = Record<string, unknown> | unknown[];

function isContainer(v: unknown): v is Container {
  return typeof v === 'object' && v !== null;
}

/** RFC 6901: "~" becomes "~0" and "/" becomes "~1". */
function escapeToken(key: string): string {
  return key.includes('~') || key.includes('/')
    ? key.replace(/~/g, '~0').replace(/\//g, '~1')
    : key;
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
function walkKey(
  before: Container,
  after: Container,
  key: string,
  ops: PatchOperation[],
  path: string,
): boolean {
  const oldVal = (before as Record<string, unknown>)[key];
  const newVal = (after as Record<string, unknown>)[key];
  // Shared, as most keys are. A value from JSON is never one of Object.prototype's, so an equal
  // value is `after`'s own and the ownership check below can be skipped.
  if (oldVal === newVal && oldVal !== undefined) return false;
  const afterIsArray = Array.isArray(after);
  if (has(after, key) && !(newVal === undefined && oldVal !== undefined && !afterIsArray)) {
    if (oldVal === newVal) return false;
    const at = `${path}/${escapeToken(key)}`;
    if (
      isContainer(oldVal) &&
      isContainer(newVal) &&
      Array.isArray(oldVal) === Array.isArray(newVal)
    )
      walk(oldVal, newVal, ops, at);
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

function walk(before: Container, after: Container, ops: PatchOperation[], path: string): void {
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
    if (!has(before, key) && a[key] !== undefined)
      ops.push({ op: 'add', path: `${path}/${escapeToken(key)}`, value: a[key] });
  }
}

/** The operations turning `original` into `copy`, where `copy` was made from it copy-on-descend. */
export function patchOfCopy(original: object, copy: object): PatchOperation[] {
  const ops: PatchOperation[] = [];
  walk(original as Container, copy as Container, ops, '');
  return ops;
}

/**
 * The JSON of string values seen in patches, by value: the settings annotation (a workload's pods
 * share theirs) and the device count recur. Bounded like settings.ts's memo of the annotation.
 */
const stringJson = new Map<string, string>();
const STRING_JSON_MAX = 256;
/** Longer strings are not kept: a settings annotation is about 200 characters. */
const STRING_JSON_LENGTH = 1024;

/** The JSON of the constants mutations share between copies (mutate.ts's node affinity). */
const constantJson = new Map<object, string>();

/**
 * Makes `value` a constant that copies may share: frozen to the leaves (so no copy can change it
 * under another), with its JSON computed once here for patchJson.
 */
export function sharedConstant<T extends object>(value: T): T {
  constantJson.set(deepFreeze(value), JSON.stringify(value));
  return value;
}

function valueJson(value: unknown): string {
  if (typeof value === 'object' && value !== null)
    return constantJson.get(value) ?? JSON.stringify(value);
  if (typeof value !== 'string') return JSON.stringify(value);
  let json = stringJson.get(value);
  if (json === undefined) {
    json = JSON.stringify(value);
    if (value.length > STRING_JSON_LENGTH) return json;
    if (stringJson.size >= STRING_JSON_MAX) stringJson.clear();
    stringJson.set(value, json);
  }
  return json;
}

/**
 * The patch as JSON, the same string as JSON.stringify(ops) (test/unit/policy/patch.test.ts checks it),
 * built per operation so that repeated values (the settings annotation is a string full of quotes,
 * slow to escape) are escaped once.
 */
export function patchJson(ops: readonly PatchOperation[]): string {
  let json = '[';
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i]!;
    json += `${i === 0 ? '' : ','}{"op":"${op.op}","path":${JSON.stringify(op.path)}`;
    if (op.op !== 'remove' && op.value !== undefined) json += `,"value":${valueJson(op.value)}`;
    json += '}';
  }
  return `${json}]`;
}

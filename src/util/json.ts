// Reading decoded JSON or YAML defensively: objects, lists and string maps, whatever a document
// holds. Shared by the policy, the webhook, the check engine and the cluster view.

/** Plain JSON object as decoded from YAML or an AdmissionReview. */
export type JsonObject = Record<string, unknown>;

/**
 * A string map read by keys that come from users (label keys in a pod's node selector): it has no
 * prototype, so a key named like a built-in (`toString`, `constructor`) finds nothing.
 */
export type StringMap = Readonly<Record<string, string>>;

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function arrayOf(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

/**
 * Reads a string-valued map (annotations, labels, nodeSelector) into an object with no prototype:
 * looking up a key a user wrote (`toString`, `constructor`) finds only what the map holds, never a
 * built-in. Values that are not strings are left out; `value` may replace each kept one (the
 * cluster view passes its string pool).
 *
 * Built whole, then given its null prototype: V8 keeps such an object in fast mode, with a hidden
 * class shared by every map of the same keys in the same order. `Object.create(null)` filled key by
 * key is a hash table instead: an ACK node's 22 labels cost 1,640 bytes that way against 226 this
 * way, 28 MB of the webhook's heap at 20,000 nodes (`npm run bench scale`, #72).
 */
export function stringMap(v: unknown, value: (s: string) => string = same): StringMap {
  const entries: [string, string][] = [];
  if (isObject(v))
    for (const k of Object.keys(v)) {
      const val = v[k];
      if (typeof val === 'string') entries.push([k, value(val)]);
    }
  return Object.setPrototypeOf(Object.fromEntries(entries), null) as StringMap;
}

const same = (s: string): string => s;

/** `map[key]` when the map itself holds the key: never a value inherited from a prototype. */
export function ownValue(map: Readonly<Record<string, string>>, key: string): string | undefined {
  return Object.hasOwn(map, key) ? map[key] : undefined;
}

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
 * built-in. Values that are not strings are left out.
 */
export function stringMap(v: unknown): StringMap {
  const out = Object.create(null) as Record<string, string>;
  if (!isObject(v)) return out;
  for (const k of Object.keys(v)) {
    const val = v[k];
    if (typeof val === 'string') out[k] = val;
  }
  return out;
}

/** `map[key]` when the map itself holds the key: never a value inherited from a prototype. */
export function ownValue(map: Readonly<Record<string, string>>, key: string): string | undefined {
  return Object.hasOwn(map, key) ? map[key] : undefined;
}

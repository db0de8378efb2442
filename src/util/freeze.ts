// Deep freezing, for values shared where nothing may change them: the loaded configuration and
// the constants that mutated copies share (src/policy/patch.ts).

/** Freezes `value` and everything reachable through its own enumerable properties; returns it. */
export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

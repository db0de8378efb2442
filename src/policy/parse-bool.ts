// Go's strconv.ParseBool, which the platform's own tooling uses to read the SMC-R annotation.
// https://pkg.go.dev/strconv#ParseBool: "1, t, T, TRUE, true, True, 0, f, F, FALSE, false, False".

const TRUE_WORDS = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);
const FALSE_WORDS = new Set(['0', 'f', 'F', 'FALSE', 'false', 'False']);

/** Returns the boolean Go would read, or undefined when Go would return an error. */
export function parseGoBool(value: string): boolean | undefined {
  if (TRUE_WORDS.has(value)) return true;
  if (FALSE_WORDS.has(value)) return false;
  return undefined;
}

/** Whether the value is one of the two spellings we document. */
export function isCanonicalBool(value: string): boolean {
  return value === 'true' || value === 'false';
}

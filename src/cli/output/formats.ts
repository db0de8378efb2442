// The formats `check -o` writes (./writer.ts picks the writer): a module of its own, so that
// building the command line loads none of the writers.
export const OUTPUT_FORMATS = [
  'text',
  'json',
  'yaml',
  'junit',
  'sarif',
  'policyreport',
  'github',
] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

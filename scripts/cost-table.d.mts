// Types of scripts/cost-table.mjs, for the unit test that holds the documents to it.
export const QUOTED_IN: readonly string[];
export function costTable(benchmarks: string): string;
export function withTable(doc: string, table: string): string;

// Types of scripts/render-manifests.mjs for the tests that import it.
export interface Target {
  readonly dir: string;
  readonly what: string;
  readonly args?: readonly string[];
  readonly files?: Readonly<Record<string, readonly string[] | null>>;
  readonly copy?: Readonly<Record<string, string>>;
}
export const CHART: string;
export const TARGETS: readonly Target[];
export function chartDigest(target: Target, chart?: string): string;
export function header(target: Target, body: string): string;
export function readHeader(text: string): { chart: string; body: string; rest: string } | undefined;
export function sha256(text: string): string;
export function renderAll(helm: string): Map<string, string>;

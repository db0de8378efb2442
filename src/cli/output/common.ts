// What every output format of `check` shares: the writer's shape, how an object is named, and
// helpers for formats that write a document piece by piece.
import type { CheckReport, CheckResult } from '../../check/check.js';

/**
 * Writes one output format as results arrive: `result` per object, `end` once with the tail;
 * `close` (always called, also after a failure) frees what the writer holds.
 */
export interface ReportWriter {
  result(r: CheckResult): void;
  end(report: ReportTail): void;
  close?(): void;
}

/** What is known only at the end of a run. */
export type ReportTail = Pick<CheckReport, 'errors' | 'summary' | 'notices'>;

/** `Kind namespace/name`, as the text output and the other formats name an object. */
export function title(r: CheckResult): string {
  return `${r.kind} ${r.namespace ? `${r.namespace}/` : ''}${r.name}`;
}

/**
 * Text for a terminal with its control characters shown as `\xNN`: a name holding ESC or CR
 * could otherwise move the cursor and redraw a DENY line as PASS.
 */
export function visible(text: string): string {
  return text.replace(
    // eslint-disable-next-line no-control-regex
    /[\x00-\x1f\x7f-\x9f]/g,
    (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`,
  );
}

/**
 * `write`, with `header` written before the first text: nothing reaches stdout when the run fails
 * before its first result (a bad --profile), so stdout never holds half a document.
 */
export function headed(write: (text: string) => void, header: string): (text: string) => void {
  let started = false;
  return (text) => {
    if (!started) {
      started = true;
      write(header);
    }
    write(text);
  };
}

/** `JSON.stringify(value, null, 2)`, its lines after the first indented by `depth` spaces. */
export function nested(value: unknown, depth: number): string {
  return JSON.stringify(value, null, 2).replace(/\n/g, `\n${' '.repeat(depth)}`);
}

/** Where a result's object is: its file, the line its document starts on, its List item path. */
export interface Location {
  readonly file: string;
  /** null for stdin read whole, or an input without lines. */
  readonly line: number | null;
  /** The item's index in each enclosing List (`kind: List` and typed lists), outermost first. */
  readonly index: readonly number[];
}

/** `file:line#items[i]#items[j]` (the source of a result) taken apart. */
export function locationOf(source: string): Location {
  const index = [...source.matchAll(/#items\[(\d+)\]/g)].map((m) => Number(m[1]));
  const head = source.replace(/#.*$/, '');
  const m = /^(.*):(\d+)$/.exec(head);
  return { file: m ? (m[1] as string) : head, line: m ? Number(m[2]) : null, index };
}

/** The file of a result's source (`file:line#index` without the position). */
export function fileOf(source: string): string {
  return source.replace(/:\d+(#.*)?$/, '');
}

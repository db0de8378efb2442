// Output formats of `check`: text for people (coloured on a TTY), JSON for tools, JUnit XML for CI
// (SARIF for code scanning is in sarif.ts, the wgpolicyk8s.io PolicyReport in policyreport.ts).
// Every format is written as results arrive, so memory stays flat in the size of the input.
import type { CheckReport, CheckResult } from '../../check/check.js';
import type { InputError } from '../../check/inputs.js';
import { policyReportWriter } from './policyreport.js';
import { sarifWriter } from './sarif.js';
import { Spool } from './spool.js';

export const OUTPUT_FORMATS = ['text', 'json', 'junit', 'sarif', 'policyreport'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

const ANSI = {
  red: '\x1b[31m',
  green: '\x1b[32m',
  yellow: '\x1b[33m',
  dim: '\x1b[2m',
  bold: '\x1b[1m',
  reset: '\x1b[0m',
};

function paint(color: boolean, code: keyof typeof ANSI, text: string): string {
  return color ? `${ANSI[code]}${text}${ANSI.reset}` : text;
}

/** `Kind namespace/name`, as the text output and the other formats name an object. */
export function title(r: CheckResult): string {
  return `${r.kind} ${r.namespace ? `${r.namespace}/` : ''}${r.name}`;
}

export interface TextOptions {
  readonly color: boolean;
  readonly showPatch: boolean;
}

/** The text lines of one result (printed as soon as it is known: `check` streams text output). */
export function formatTextResult(r: CheckResult, opts: TextOptions): string {
  const c = opts.color;
  const tag = r.allowed ? paint(c, 'green', 'PASS') : paint(c, 'red', 'DENY');
  const lines = [`${tag}  ${paint(c, 'bold', title(r))}  ${paint(c, 'dim', r.source)}`];
  for (const d of r.denials) {
    lines.push(`      ${paint(c, 'red', `✘ [${d.rule}]`)} ${d.message}`);
    lines.push(`        ${paint(c, 'dim', `at ${d.path}`)}`);
  }
  for (const w of r.warnings) lines.push(`      ${paint(c, 'yellow', '! warning:')} ${w}`);
  if (opts.showPatch && r.patch.length > 0) {
    lines.push(`      ${paint(c, 'dim', 'patch:')}`);
    for (const op of r.patch) lines.push(`        ${JSON.stringify(op)}`);
  }
  return `${lines.join('\n')}\n`;
}

/** The input errors and the summary line that end the text output. */
export function formatTextFooter(report: ReportTail, opts: TextOptions): string {
  const c = opts.color;
  const lines = report.errors.map(
    (e) => `${paint(c, 'red', 'ERROR')} ${paint(c, 'dim', e.source)}  ${e.message}`,
  );
  const s = report.summary;
  const errors = s.errors > 0 ? `, ${s.errors} input error(s)` : '';
  const summary = `${s.objects} object(s) checked: ${s.allowed} allowed, ${s.denied} denied${errors}`;
  lines.push(
    '',
    s.denied > 0 || s.errors > 0 ? paint(c, 'red', summary) : paint(c, 'green', summary),
  );
  return `${lines.join('\n')}\n`;
}

function xml(text: string): string {
  return (
    text
      // XML 1.0 forbids most control characters even when escaped.
      // eslint-disable-next-line no-control-regex
      .replace(/[^\x09\x0A\x0D\x20-\uD7FF\uE000-\uFFFD]/g, '')
      .replace(/&/g, '&amp;')
      .replace(/</g, '&lt;')
      .replace(/>/g, '&gt;')
      .replace(/"/g, '&quot;')
  );
}

function fileOf(source: string): string {
  return source.replace(/:\d+(#.*)?$/, '');
}

function testcase(r: CheckResult): string {
  const parts = [
    `    <testcase classname="${xml(fileOf(r.source))}" name="${xml(`${title(r)} (${r.source})`)}">`,
  ];
  if (!r.allowed) {
    const first = r.denials[0];
    const body = r.denials.map((d) => `[${d.rule}] ${d.message} (at ${d.path})`).join('\n');
    parts.push(
      `      <failure type="${xml(first?.rule ?? 'denied')}" message="${xml(first?.message ?? 'denied')}">${xml(body)}</failure>`,
    );
  }
  if (r.warnings.length > 0)
    parts.push(
      `      <system-out>${xml(r.warnings.map((w) => `warning: ${w}`).join('\n'))}</system-out>`,
    );
  parts.push('    </testcase>');
  return parts.join('\n');
}

function errorcase(e: InputError): string {
  return [
    `    <testcase classname="${xml(fileOf(e.source))}" name="${xml(`read ${e.source}`)}">`,
    `      <error type="${e.code}" message="${xml(e.message)}">${xml(e.message)}</error>`,
    '    </testcase>',
  ].join('\n');
}

/**
 * JUnit XML, one testsuite per input file, one testcase per object (and per input error). The
 * totals head the document, so the finished suites wait in a spool (memory, then a file) until
 * the end: never the objects or their patches.
 */
function junitWriter(out: (text: string) => void): ReportWriter {
  const spool = new Spool();
  let file: string | undefined;
  let cases: string[] = [];
  let failures = 0;
  const flush = (): void => {
    if (file === undefined) return;
    spool.append(`${suite(file, cases, failures, 0)}\n`);
    cases = [];
    failures = 0;
  };
  return {
    result(r) {
      const f = fileOf(r.source);
      if (f !== file) {
        flush();
        file = f;
      }
      cases.push(testcase(r));
      if (!r.allowed) failures += 1;
    },
    end(report) {
      flush();
      const byFile = new Map<string, string[]>();
      for (const e of report.errors) {
        const list = byFile.get(fileOf(e.source)) ?? [];
        list.push(errorcase(e));
        byFile.set(fileOf(e.source), list);
      }
      const s = report.summary;
      out(
        `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="erdma-smcr check" tests="${s.objects + s.errors}" failures="${s.denied}" errors="${s.errors}">\n`,
      );
      spool.copy(out);
      for (const [f, errs] of byFile) out(`${suite(f, errs, 0, errs.length)}\n`);
      out('</testsuites>\n');
    },
    close: () => spool.close(),
  };
}

function suite(file: string, cases: readonly string[], failures: number, errors: number): string {
  return [
    `  <testsuite name="${xml(file)}" tests="${cases.length}" failures="${failures}" errors="${errors}" skipped="0">`,
    ...cases,
    '  </testsuite>',
  ].join('\n');
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

/**
 * The JSON report, written result by result: byte for byte what `JSON.stringify(report, null, 2)`
 * of the whole report would give (JSON escapes newlines in strings, so re-indenting lines is safe).
 */
function jsonWriter(write: (text: string) => void): ReportWriter {
  let count = 0;
  const out = headed(write, '{\n  "results": [');
  return {
    result(r) {
      out(`${count === 0 ? '\n' : ',\n'}    ${nested(r, 4)}`);
      count += 1;
    },
    end(report) {
      out(
        `${count === 0 ? ']' : '\n  ]'},\n  "errors": ${nested(report.errors, 2)},\n  "summary": ${nested(report.summary, 2)}\n}\n`,
      );
    },
  };
}

function textWriter(out: (text: string) => void, opts: TextOptions): ReportWriter {
  return {
    result: (r) => out(formatTextResult(r, opts)),
    end: (report) => out(formatTextFooter(report, opts)),
  };
}

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
export type ReportTail = Pick<CheckReport, 'errors' | 'summary'>;

export interface WriterOptions {
  readonly text: TextOptions;
  readonly version: string;
  /** The run's time, for formats that carry one (PolicyReport). */
  readonly now: Date;
}

export function reportWriter(
  format: OutputFormat,
  out: (text: string) => void,
  opts: WriterOptions,
): ReportWriter {
  switch (format) {
    case 'text':
      return textWriter(out, opts.text);
    case 'json':
      return jsonWriter(out);
    case 'junit':
      return junitWriter(out);
    case 'sarif':
      return sarifWriter(out, opts.version);
    case 'policyreport':
      return policyReportWriter(out, opts.now);
  }
}

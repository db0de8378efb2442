// Output formats of `check`: text for people (coloured on a TTY), JSON for tools, JUnit XML for CI
// (SARIF for code scanning is in sarif.ts).
import type { CheckReport, CheckResult } from './check.js';
import type { InputError } from './inputs.js';

export type OutputFormat = 'text' | 'json' | 'junit' | 'sarif';

const ANSI = { red: '\x1b[31m', green: '\x1b[32m', yellow: '\x1b[33m', dim: '\x1b[2m', bold: '\x1b[1m', reset: '\x1b[0m' };

function paint(color: boolean, code: keyof typeof ANSI, text: string): string {
  return color ? `${ANSI[code]}${text}${ANSI.reset}` : text;
}

function title(r: CheckResult): string {
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
export function formatTextFooter(report: Pick<CheckReport, 'errors' | 'summary'>, opts: TextOptions): string {
  const c = opts.color;
  const lines = report.errors.map((e) => `${paint(c, 'red', 'ERROR')} ${paint(c, 'dim', e.source)}  ${e.message}`);
  const s = report.summary;
  const errors = s.errors > 0 ? `, ${s.errors} input error(s)` : '';
  const summary = `${s.objects} object(s) checked: ${s.allowed} allowed, ${s.denied} denied${errors}`;
  lines.push('', s.denied > 0 || s.errors > 0 ? paint(c, 'red', summary) : paint(c, 'green', summary));
  return `${lines.join('\n')}\n`;
}

export function formatJson(report: CheckReport): string {
  return `${JSON.stringify(report, null, 2)}\n`;
}

function xml(text: string): string {
  return text
    // XML 1.0 forbids most control characters even when escaped.
    // eslint-disable-next-line no-control-regex
    .replace(/[^\x09\x0A\x0D\x20-\uD7FF\uE000-\uFFFD]/g, '')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;');
}

function fileOf(source: string): string {
  return source.replace(/:\d+(#.*)?$/, '');
}

function testcase(r: CheckResult): string {
  const parts = [`    <testcase classname="${xml(fileOf(r.source))}" name="${xml(`${title(r)} (${r.source})`)}">`];
  if (!r.allowed) {
    const first = r.denials[0];
    const body = r.denials.map((d) => `[${d.rule}] ${d.message} (at ${d.path})`).join('\n');
    parts.push(`      <failure type="${xml(first?.rule ?? 'denied')}" message="${xml(first?.message ?? 'denied')}">${xml(body)}</failure>`);
  }
  if (r.warnings.length > 0) parts.push(`      <system-out>${xml(r.warnings.map((w) => `warning: ${w}`).join('\n'))}</system-out>`);
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

/** JUnit XML, one testsuite per input file, one testcase per object (and per input error). */
export function formatJunit(report: CheckReport): string {
  const byFile = new Map<string, { results: CheckResult[]; errors: InputError[] }>();
  const entry = (f: string): { results: CheckResult[]; errors: InputError[] } => {
    const e = byFile.get(f) ?? { results: [], errors: [] };
    byFile.set(f, e);
    return e;
  };
  for (const r of report.results) entry(fileOf(r.source)).results.push(r);
  for (const e of report.errors) entry(fileOf(e.source)).errors.push(e);
  const suites = [...byFile].map(([file, { results: rs, errors }]) => {
    const failures = rs.filter((r) => !r.allowed).length;
    return [
      `  <testsuite name="${xml(file)}" tests="${rs.length + errors.length}" failures="${failures}" errors="${errors.length}" skipped="0">`,
      ...rs.map(testcase),
      ...errors.map(errorcase),
      '  </testsuite>',
    ].join('\n');
  });
  const s = report.summary;
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="erdma-smcr check" tests="${s.objects + s.errors}" failures="${s.denied}" errors="${s.errors}">`,
    ...suites,
    '</testsuites>',
    '',
  ].join('\n');
}

// `check --output junit`: JUnit XML for CI systems, one testsuite per input file, one testcase
// per object (and per input error).
import { skipped, type CheckResult } from '../../check/check.js';
import type { InputError } from '../../check/inputs.js';
import { fileOf, title, type ReportWriter } from './common.js';
import { Spool } from './spool.js';

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
  // Counted as skipped in text and JSON (the policy does not apply to it): the same here (#80).
  if (skipped(r))
    parts.push('      <skipped message="the SMC-R policy does not apply to this object"/>');
  if (r.warnings.length > 0)
    parts.push(
      `      <system-out>${xml(r.warnings.map((w) => `warning: [${w.rule}] ${w.message}`).join('\n'))}</system-out>`,
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
export function junitWriter(out: (text: string) => void): ReportWriter {
  const spool = new Spool();
  let file: string | undefined;
  let cases: string[] = [];
  let failures = 0;
  let skips = 0;
  const flush = (): void => {
    if (file === undefined) return;
    spool.append(`${suite(file, cases, failures, 0, skips)}\n`);
    cases = [];
    failures = 0;
    skips = 0;
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
      if (skipped(r)) skips += 1;
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
        `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="erdma-smcr check" tests="${s.objects + s.errors}" failures="${s.denied}" errors="${s.errors}" skipped="${s.skipped}">\n`,
      );
      spool.copy(out);
      for (const [f, errs] of byFile) out(`${suite(f, errs, 0, errs.length)}\n`);
      // What the run says of itself (skipped documents, no node list): a suite of no test case,
      // whose system-out CI systems show beside the results.
      if ((report.notices ?? []).length > 0)
        out(
          `  <testsuite name="erdma-smcr check: notes" tests="0" failures="0" errors="0" skipped="0">\n    <system-out>${xml((report.notices ?? []).join('\n'))}</system-out>\n  </testsuite>\n`,
        );
      out('</testsuites>\n');
    },
    close: () => spool.close(),
  };
}

function suite(
  file: string,
  cases: readonly string[],
  failures: number,
  errors: number,
  skips = 0,
): string {
  return [
    `  <testsuite name="${xml(file)}" tests="${cases.length}" failures="${failures}" errors="${errors}" skipped="${skips}">`,
    ...cases,
    '  </testsuite>',
  ].join('\n');
}

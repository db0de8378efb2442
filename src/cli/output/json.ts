// `check --output json`: the whole report as one JSON document, written result by result.
import { headed, locationOf, nested, type ReportWriter } from './common.js';

/**
 * The JSON report's version: raised when a field changes meaning or goes away (fields may be
 * added within a version). 1: results with file, line and index beside source.
 */
export const JSON_SCHEMA_VERSION = 1;

/**
 * The JSON report, written result by result: byte for byte what `JSON.stringify(report, null, 2)`
 * of the whole report would give (with the schema version first, and each result's location) (JSON escapes newlines in strings, so re-indenting lines is safe).
 */
export function jsonWriter(write: (text: string) => void): ReportWriter {
  let count = 0;
  const out = headed(write, `{\n  "schemaVersion": ${JSON_SCHEMA_VERSION},\n  "results": [`);
  return {
    result(r) {
      const { source, ...rest } = r;
      out(
        `${count === 0 ? '\n' : ',\n'}    ${nested({ source, ...locationOf(source), ...rest }, 4)}`,
      );
      count += 1;
    },
    end(report) {
      out(
        `${count === 0 ? ']' : '\n  ]'},\n  "errors": ${nested(report.errors, 2)},\n  "notices": ${nested(report.notices ?? [], 2)},\n  "summary": ${nested(report.summary, 2)}\n}\n`,
      );
    },
  };
}

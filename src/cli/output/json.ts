// `check --output json`: the whole report as one JSON document, written result by result.
import { headed, nested, type ReportWriter } from './common.js';

/**
 * The JSON report, written result by result: byte for byte what `JSON.stringify(report, null, 2)`
 * of the whole report would give (JSON escapes newlines in strings, so re-indenting lines is safe).
 */
export function jsonWriter(write: (text: string) => void): ReportWriter {
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

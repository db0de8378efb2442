// The output formats of `check`, by name: each is written as results arrive, so memory stays flat
// in the size of the input (text and JSON here by name; each format in its own file).
import type { ReportWriter } from './common.js';
import { githubWriter } from './github.js';
import { jsonWriter } from './json.js';
import { junitWriter } from './junit.js';
import { policyReportWriter } from './policyreport.js';
import { sarifWriter } from './sarif.js';
import { textWriter, type TextOptions } from './text.js';
import { yamlWriter } from './yaml.js';

export type { ReportTail, ReportWriter } from './common.js';

import type { OutputFormat } from './formats.js';

export { OUTPUT_FORMATS, type OutputFormat } from './formats.js';

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
    case 'yaml':
      return yamlWriter(out);
    case 'junit':
      return junitWriter(out);
    case 'sarif':
      return sarifWriter(out, opts.version);
    case 'policyreport':
      return policyReportWriter(out, opts.now);
    case 'github':
      return githubWriter(out);
  }
}

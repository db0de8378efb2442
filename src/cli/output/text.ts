// `check --output text`: for people, one block per object as it is known, coloured on a terminal.
import { title, visible, type ReportTail, type ReportWriter } from './common.js';
import { skipped, type CheckResult } from '../../check/check.js';
import { toYaml } from '../../util/yaml.js';

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

export interface TextOptions {
  readonly color: boolean;
  readonly showPatch: boolean;
  /** Each admitted pod as YAML: --show-mutated. */
  readonly showMutated?: boolean;
  /** Only denials and warnings (and the summary): --quiet. */
  readonly quiet?: boolean;
}

/** The text lines of one result (printed as soon as it is known: `check` streams text output). */
export function formatTextResult(r: CheckResult, opts: TextOptions): string {
  const c = opts.color;
  // SKIP: the policy does not apply (no SMC-R annotation, no RDMA device); PASS: it applied.
  const tag = !r.allowed
    ? paint(c, 'red', 'DENY')
    : skipped(r)
      ? paint(c, 'dim', 'SKIP')
      : paint(c, 'green', 'PASS');
  const lines = [
    `${tag}  ${paint(c, 'bold', visible(title(r)))}  ${paint(c, 'dim', visible(r.source))}`,
  ];
  for (const d of r.denials) {
    lines.push(`      ${paint(c, 'red', `✘ [${d.rule}]`)} ${visible(d.message)}`);
    lines.push(`        ${paint(c, 'dim', `at ${visible(d.path)}`)}`);
  }
  for (const w of r.warnings)
    lines.push(`      ${paint(c, 'yellow', '! warning:')} [${w.rule}] ${visible(w.message)}`);
  const preview = r.preview;
  const each = preview?.fromTemplate ? ' (each pod it creates)' : '';
  const patch = preview?.patch ?? r.patch;
  if (opts.showPatch && patch.length > 0) {
    lines.push(`      ${paint(c, 'dim', `patch${each}:`)}`);
    for (const op of patch) lines.push(`        ${visible(JSON.stringify(op))}`);
  }
  if (opts.showMutated && preview) {
    lines.push(`      ${paint(c, 'dim', `admitted as${each}:`)}`);
    for (const l of toYaml(preview.pod).trimEnd().split('\n')) lines.push(`        ${visible(l)}`);
  }
  return `${lines.join('\n')}\n`;
}

/** The input errors and the summary line that end the text output. */
export function formatTextFooter(report: ReportTail, opts: TextOptions): string {
  const c = opts.color;
  // A message that names its own location (a parser's `file:line:col: ...`, `cannot read FILE: ...`)
  // is not given it twice.
  const lines = report.errors.map((e) =>
    e.message.includes(e.source)
      ? `${paint(c, 'red', 'ERROR')} ${visible(e.message)}`
      : `${paint(c, 'red', 'ERROR')} ${paint(c, 'dim', visible(e.source))}  ${visible(e.message)}`,
  );
  const s = report.summary;
  const errors = s.errors > 0 ? `, ${s.errors} input error(s)` : '';
  const warned = s.warnings > 0 ? `, ${s.warnings} warning(s)` : '';
  const skips = s.skipped > 0 ? ` (${s.skipped} skipped: not for SMC-R)` : '';
  const summary = `${s.objects} object(s) checked: ${s.allowed} allowed${skips}, ${s.denied} denied${warned}${errors}`;
  lines.push(
    '',
    s.denied > 0 || s.errors > 0 ? paint(c, 'red', summary) : paint(c, 'green', summary),
  );
  return `${lines.join('\n')}\n`;
}

export function textWriter(out: (text: string) => void, opts: TextOptions): ReportWriter {
  return {
    result: (r) => {
      if (!opts.quiet || !r.allowed || r.warnings.length > 0) out(formatTextResult(r, opts));
    },
    end: (report) => out(formatTextFooter(report, opts)),
  };
}

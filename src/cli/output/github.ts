// `check --output github`: GitHub Actions workflow commands, one per finding, so a denial shows on
// the line of the file in the pull request (`::error file=F,line=L,title=T::message`), followed
// by the text summary. Values are escaped as the runner's toolkit escapes them.
import { fileOf, title, type ReportWriter } from './common.js';

/** Escapes a message (%, CR, LF) and, for properties, also ':' and ','. */
function escapeData(s: string): string {
  return s.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
}
function escapeProperty(s: string): string {
  return escapeData(s).replace(/:/g, '%3A').replace(/,/g, '%2C');
}

/** `file:line#index` → the file and line GitHub can point at. */
function where(source: string): string {
  const m = /:(\d+)(#.*)?$/.exec(source);
  const file = fileOf(source);
  return file === '<stdin>' ? '' : `file=${escapeProperty(file)}${m ? `,line=${m[1]}` : ''}`;
}

function command(
  kind: 'error' | 'warning' | 'notice',
  source: string,
  heading: string,
  message: string,
): string {
  const props = [source ? where(source) : '', `title=${escapeProperty(heading)}`]
    .filter(Boolean)
    .join(',');
  return `::${kind} ${props}::${escapeData(message)}\n`;
}

export function githubWriter(write: (text: string) => void): ReportWriter {
  return {
    result(r) {
      for (const d of r.denials)
        write(command('error', r.source, `${title(r)} [${d.rule}]`, `${d.message} (at ${d.path})`));
      for (const w of r.warnings)
        write(command('warning', r.source, `${title(r)} [${w.rule}]`, w.message));
    },
    end(report) {
      for (const e of report.errors)
        write(command('error', e.source, 'erdma-smcr check', e.message));
      // What the run says of itself: a workflow notice, never a warning on a file.
      for (const n of report.notices ?? []) write(command('notice', '', 'erdma-smcr check', n));
      const s = report.summary;
      write(
        `${s.objects} object(s) checked: ${s.allowed} allowed, ${s.denied} denied, ${s.warnings} warning(s)${s.errors > 0 ? `, ${s.errors} input error(s)` : ''}\n`,
      );
    },
  };
}

// `check -o yaml`: the admitted objects as one YAML stream, as the API server would store them,
// for `| kubectl apply -f -` (as kyverno apply writes patched resources): each Pod as the webhook
// mutates it, any other object as written (the webhook mutates the pods a workload's controller
// creates, not its template). What is denied is left out, named in a comment; so are input errors.
import { toYaml } from '../../util/yaml.js';
import { title, type ReportWriter } from './common.js';

/** A YAML comment: one line, nothing in it can end it. */
const comment = (text: string): string => `# ${text.replace(/[\r\n]+/g, ' ')}\n`;

export function yamlWriter(write: (text: string) => void): ReportWriter {
  return {
    result(r) {
      if (r.admitted) {
        write(`---\n${toYaml(r.admitted)}`);
        return;
      }
      for (const d of r.denials)
        write(comment(`denied, left out: ${title(r)} (${r.source}) [${d.rule}] ${d.message}`));
    },
    end(report) {
      for (const e of report.errors) write(comment(`not read: ${e.message}`));
      for (const n of report.notices ?? []) write(comment(n));
      const s = report.summary;
      write(
        comment(
          `${s.objects} object(s) checked: ${s.allowed} written, ${s.denied} denied and left out`,
        ),
      );
    },
  };
}

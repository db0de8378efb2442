// `check --output policyreport`: the results as wgpolicyk8s.io/v1alpha2 PolicyReports, which
// policy-report UIs (Policy Reporter, the Kyverno and Kubewarden UIs) read from the cluster. One
// PolicyReport per namespace the checked objects name (objects without one share the report
// `erdma-smcr-check-no-namespace`, which names none, so `kubectl apply` puts it in the context's
// namespace, where they would land too), split every MAX_RESULTS_PER_REPORT results, and a
// ClusterPolicyReport for inputs that could not be read; all in one `v1 List`, ready for
// `kubectl apply -f`. The wgpolicyk8s.io CRDs must be installed (Kyverno and Policy Reporter do).
//
// Per object whose pod carries the SMC-R annotation: one `pass`, or one `fail` per denial; one
// `warn` per warning (of any object). Objects the policy does not apply to are not listed.
import type { CheckResult } from '../../check/check.js';
import { nested, title, type ReportWriter } from './common.js';
import { Spool } from './spool.js';

export const POLICY_REPORT_API_VERSION = 'wgpolicyk8s.io/v1alpha2';
const NAME = 'erdma-smcr-check';
/** Objects that name no namespace: a report of their own, so it never overwrites the `default` one. */
const NAME_NO_NAMESPACE = 'erdma-smcr-check-no-namespace';
/**
 * Results per report: about 0.5 KiB each, so a report stays far below etcd's 1.5 MiB object limit.
 * A larger group is split into `erdma-smcr-check`, `erdma-smcr-check-2`, ...
 */
export const MAX_RESULTS_PER_REPORT = 1000;
const POLICY = 'erdma-smcr';
const LABELS = { 'app.kubernetes.io/managed-by': 'erdma-smcr' };

type Outcome = 'pass' | 'fail' | 'warn' | 'error' | 'skip';
type Summary = Record<Outcome, number>;

/** A namespace's results: each is finished JSON text in the spool; only where it lies is kept here. */
interface Group {
  readonly offsets: number[];
  readonly lengths: number[];
  readonly outcomes: Outcome[];
}

const newGroup = (): Group => ({ offsets: [], lengths: [], outcomes: [] });

const emptySummary = (): Summary => ({ pass: 0, fail: 0, warn: 0, error: 0, skip: 0 });

export function policyReportWriter(out: (text: string) => void, now: Date): ReportWriter {
  const timestamp = {
    seconds: Math.floor(now.getTime() / 1000),
    nanos: (now.getTime() % 1000) * 1_000_000,
  };
  const groups = new Map<string, Group>();
  const spool = new Spool();
  const record = (g: Group, entry: Record<string, unknown> & { result: Outcome }): void => {
    const text = nested(
      { policy: POLICY, source: POLICY, category: 'SMC-R', timestamp, ...entry },
      8,
    );
    const at = spool.append(text);
    g.offsets.push(at);
    g.lengths.push(spool.size - at);
    g.outcomes.push(entry.result);
  };
  const add = (namespace: string, entry: Record<string, unknown> & { result: Outcome }): void => {
    let g = groups.get(namespace);
    if (!g) groups.set(namespace, (g = newGroup()));
    record(g, entry);
  };
  return {
    result(r) {
      const common = {
        scored: true,
        resources: [reference(r)],
        properties: { manifest: r.source },
      };
      if (r.annotated && r.allowed)
        add(r.namespace, {
          rule: 'admission',
          result: 'pass',
          message: `${title(r)} would be admitted`,
          ...common,
        });
      for (const d of r.denials)
        add(r.namespace, {
          rule: d.rule,
          result: 'fail',
          severity: 'high',
          message: `${d.path}: ${d.message}`,
          ...common,
        });
      for (const w of r.warnings)
        add(r.namespace, {
          rule: w.rule,
          result: 'warn',
          severity: 'low',
          message: w.message,
          ...common,
        });
    },
    end(report) {
      const reports: [ReportKind, string, Group][] = [...groups].map(([namespace, g]) => [
        'PolicyReport',
        namespace,
        g,
      ]);
      if (report.errors.length > 0) {
        const g = newGroup();
        for (const e of report.errors)
          record(g, {
            rule: 'input',
            result: 'error',
            message: e.message,
            properties: { manifest: e.source, code: e.code },
          });
        reports.push(['ClusterPolicyReport', '', g]);
      }
      out('{\n  "apiVersion": "v1",\n  "kind": "List",\n  "items": [');
      let first = true;
      for (const [kind, namespace, g] of reports) {
        for (let from = 0, n = 1; from < g.offsets.length; from += MAX_RESULTS_PER_REPORT, n += 1) {
          out(first ? '' : ',');
          first = false;
          writeReport(
            out,
            spool,
            kind,
            namespace,
            n,
            g,
            from,
            Math.min(g.offsets.length, from + MAX_RESULTS_PER_REPORT),
          );
        }
      }
      out(`${first ? '' : '\n  '}]\n}\n`);
    },
    close: () => spool.close(),
  };
}

/** An ObjectReference to the checked object (fields it does not have are left out). */
function reference(r: CheckResult): Record<string, string> {
  return {
    ...(r.apiVersion ? { apiVersion: r.apiVersion } : {}),
    ...(r.kind !== '(no kind)' ? { kind: r.kind } : {}),
    ...(r.namespace ? { namespace: r.namespace } : {}),
    name: r.name,
  };
}

type ReportKind = 'PolicyReport' | 'ClusterPolicyReport';

/** The `n`th report of a group: results [from, to), copied from the spool as they were written. */
function writeReport(
  out: (text: string) => void,
  spool: Spool,
  kind: ReportKind,
  namespace: string,
  n: number,
  g: Group,
  from: number,
  to: number,
): void {
  const base = kind === 'PolicyReport' && !namespace ? NAME_NO_NAMESPACE : NAME;
  const summary = emptySummary();
  for (let k = from; k < to; k++) summary[g.outcomes[k]!] += 1;
  const metadata = {
    name: n === 1 ? base : `${base}-${n}`,
    ...(namespace ? { namespace } : {}),
    labels: LABELS,
  };
  out(
    `\n    {\n      "apiVersion": ${JSON.stringify(POLICY_REPORT_API_VERSION)},\n      "kind": "${kind}",\n      "metadata": ${nested(metadata, 6)},\n      "summary": ${nested(summary, 6)},\n      "results": [`,
  );
  for (let k = from; k < to; k++) {
    out(k === from ? '\n        ' : ',\n        ');
    spool.copy(out, g.offsets[k]!, g.lengths[k]!);
  }
  out('\n      ]\n    }');
}

// SARIF 2.1.0 output of `check`, for code-scanning UIs that annotate the manifest line: one result
// per denial (error) and per warning, one per input that could not be read; the rules are the
// policy's rule ids. https://docs.oasis-open.org/sarif/sarif/v2.1.0/sarif-v2.1.0.html
import type { CheckReport } from './check.js';

const SCHEMA = 'https://json.schemastore.org/sarif-2.1.0.json';
const INFO_URI = 'https://github.com/erdma-smcr/erdma-smcr';
/** Rule ids of results that are not policy denials. */
const WARNING_RULE = 'policy-warning';
const INPUT_RULE = 'input-error';

interface Location {
  physicalLocation: { artifactLocation: { uri: string }; region?: { startLine: number } };
}

/** `file:line` or `file:line#items[i]` (or a bare file) as a SARIF location. */
function location(source: string): Location {
  const m = /^(.*?):(\d+)(?:#.*)?$/.exec(source);
  const file = m ? (m[1] ?? source) : source;
  // A relative URI reference: path separators stay, anything else unsafe is percent-encoded.
  const uri = file.split('/').map(encodeURIComponent).join('/');
  return { physicalLocation: { artifactLocation: { uri }, ...(m ? { region: { startLine: Math.max(1, Number(m[2])) } } : {}) } };
}

export function formatSarif(report: CheckReport, version: string): string {
  const results: Record<string, unknown>[] = [];
  const ruleIds = new Set<string>();
  for (const r of report.results) {
    const where = [location(r.source)];
    const what = `${r.kind} ${r.namespace ? `${r.namespace}/` : ''}${r.name}`;
    for (const d of r.denials) {
      ruleIds.add(d.rule);
      results.push({ ruleId: d.rule, level: 'error', message: { text: `${what}: ${d.path}: ${d.message}` }, locations: where });
    }
    for (const w of r.warnings) {
      ruleIds.add(WARNING_RULE);
      results.push({ ruleId: WARNING_RULE, level: 'warning', message: { text: `${what}: ${w}` }, locations: where });
    }
  }
  for (const e of report.errors) {
    ruleIds.add(INPUT_RULE);
    results.push({ ruleId: INPUT_RULE, level: 'error', message: { text: e.message }, locations: [location(e.source)] });
  }
  const rules = [...ruleIds].sort().map((id) => ({
    id,
    shortDescription: { text: id === WARNING_RULE ? 'SMC-R policy warning' : id === INPUT_RULE ? 'input could not be read or parsed' : `SMC-R admission rule ${id}` },
    helpUri: `${INFO_URI}/blob/main/docs/troubleshooting.md`,
  }));
  const log = {
    $schema: SCHEMA,
    version: '2.1.0',
    runs: [
      {
        tool: { driver: { name: 'erdma-smcr', version, informationUri: INFO_URI, rules } },
        invocations: [{ executionSuccessful: report.errors.length === 0 }],
        results,
      },
    ],
  };
  return `${JSON.stringify(log, null, 2)}\n`;
}

// SARIF 2.1.0 output of `check`, for code-scanning UIs that annotate the manifest line: one result
// per denial (error) and per warning, one per input that could not be read; the rules are the
// policy's rule ids. https://docs.oasis-open.org/sarif/sarif/v2.1.0/sarif-v2.1.0.html
// Written as results arrive: the run's `results` come first and its `tool` (whose rule list is
// known only at the end) after them; SARIF, being JSON, gives property order no meaning.
import { isAbsolute } from 'node:path';
import { pathToFileURL } from 'node:url';
import { plain, RULE_CATALOGUE } from '../../policy/catalogue.js';
import { CHECK_NOTE } from '../../check/check.js';
import type { InputError } from '../../check/inputs.js';
import { headed, nested, title, type ReportWriter } from './common.js';

const SCHEMA = 'https://json.schemastore.org/sarif-2.1.0.json';
const INFO_URI = 'https://github.com/erdma-smcr/erdma-smcr';
/** Rule ids of results that are not the policy's: check's own notes, unreadable inputs. */
const INPUT_RULE = 'input-error';

interface Location {
  physicalLocation: {
    artifactLocation: { uri: string; description?: { text: string } };
    region?: { startLine: number };
  };
}

/** How check names standard input (src/check/inputs.ts). */
const STDIN_NAME = '<stdin>';

/** `file:line` or `file:line#items[i]` (or a bare file) as a SARIF location. */
function location(source: string): Location {
  const m = /^(.*?):(\d+)(?:#.*)?$/.exec(source);
  const file = m ? (m[1] ?? source) : source;
  // An absolute path is a file:// URI (SARIF 2.1.0 3.10.2: an absolute URI, or one relative to a
  // base); a relative one a relative URI reference: separators stay, anything else unsafe is
  // percent-encoded.
  // Standard input has no file: the relative reference "stdin", said in words (#102: it was the
  // percent-encoded "%3Cstdin%3E").
  const artifactLocation =
    file === STDIN_NAME
      ? { uri: 'stdin', description: { text: 'the standard input' } }
      : {
          uri: isAbsolute(file)
            ? pathToFileURL(file).href
            : file.split('/').map(encodeURIComponent).join('/'),
        };
  return {
    physicalLocation: {
      artifactLocation,
      ...(m ? { region: { startLine: Math.max(1, Number(m[2])) } } : {}),
    },
  };
}

function ruleText(id: string): string {
  if (id === CHECK_NOTE) return 'what erdma-smcr check notes of an input';
  if (id === INPUT_RULE) return 'input could not be read or parsed';
  return `SMC-R admission rule ${id}`;
}

export function sarifWriter(write: (text: string) => void, version: string): ReportWriter {
  const out = headed(
    write,
    `{\n  "$schema": ${JSON.stringify(SCHEMA)},\n  "version": "2.1.0",\n  "runs": [\n    {\n      "results": [`,
  );
  const ruleIds = new Set<string>();
  let count = 0;
  const emit = (result: Record<string, unknown>): void => {
    ruleIds.add(result.ruleId as string);
    out(`${count === 0 ? '\n' : ',\n'}        ${nested(result, 8)}`);
    count += 1;
  };
  return {
    result(r) {
      const where = [location(r.source)];
      const what = title(r);
      for (const d of r.denials)
        emit({
          ruleId: d.rule,
          level: 'error',
          message: { text: `${what}: ${d.path}: ${d.message}` },
          locations: where,
        });
      for (const w of r.warnings)
        emit({
          ruleId: w.rule,
          level: 'warning',
          message: { text: `${what}: ${w.message}` },
          locations: where,
        });
    },
    end(report) {
      for (const e of report.errors) emit(inputResult(e));
      const rules = [...ruleIds].sort().map((id) => {
        const entry = RULE_CATALOGUE.find((r) => r.id === id);
        if (!entry)
          return {
            id,
            shortDescription: { text: ruleText(id) },
            helpUri: `${INFO_URI}/blob/main/docs/troubleshooting.md`,
          };
        // What code scanning shows beside each alert: when the rule denies, and the fix.
        return {
          id,
          shortDescription: { text: ruleText(id) },
          fullDescription: { text: `Denies when ${plain(entry.when)}.` },
          help: {
            text: `Fix: ${plain(entry.fix)}.`,
            markdown: `**Denies when** ${entry.when}.\n\n**Fix:** ${entry.fix}.`,
          },
          helpUri: `${INFO_URI}/blob/main/docs/policy.md#the-admission-rules`,
        };
      });
      const tool = { driver: { name: 'erdma-smcr', version, informationUri: INFO_URI, rules } };
      // What the run says of itself (no node list, a profile not used): notes of the run, not
      // results (SARIF 2.1.0 §3.20.21, toolExecutionNotifications).
      const invocations = [
        {
          executionSuccessful: report.errors.length === 0,
          ...((report.notices ?? []).length > 0
            ? {
                toolExecutionNotifications: (report.notices ?? []).map((n) => ({
                  level: 'note',
                  message: { text: n },
                })),
              }
            : {}),
        },
      ];
      out(
        `${count === 0 ? ']' : '\n      ]'},\n      "tool": ${nested(tool, 6)},\n      "invocations": ${nested(invocations, 6)}\n    }\n  ]\n}\n`,
      );
    },
  };
}

function inputResult(e: InputError): Record<string, unknown> {
  return {
    ruleId: INPUT_RULE,
    level: 'error',
    message: { text: e.message },
    locations: [location(e.source)],
  };
}

// The admission rules as users look them up (`erdma-smcr rules`, SARIF's rule list): read from
// src/policy/rules/. docs/policy.md's tables are these rows (test/unit/policy/catalogue.test.ts).

import { RULES, type Rule } from './rules/index.js';

/** A rule as `erdma-smcr rules` shows it: what src/policy/rules/ holds of it, without its check. */
export type RuleEntry = Omit<Rule, 'check'>;

export const RULE_CATALOGUE: readonly RuleEntry[] = RULES.map(
  ({ id, scope, when, fix, example }) =>
    example === undefined ? { id, scope, when, fix } : { id, scope, when, fix, example },
);

/** Markdown as plain text for a terminal: code spans keep their text, links their text and page. */
export function plain(markdown: string): string {
  return markdown
    .replace(/`([^`]*)`/g, '$1')
    .replace(/\[([^\]]*)\]\(([^)#]*)[^)]*\)/g, (_, text: string, page: string) =>
      !page.endsWith('.md') || page.includes('/')
        ? text
        : text === page
          ? `docs/${page}`
          : `${text} (docs/${page})`,
    );
}

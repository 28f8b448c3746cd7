// The rule reference in docs/preflight.md is generated from the rules' own metadata, so the
// two cannot drift (test/preflight/preflight-doc.test.ts compares them).
import { preflightRules } from './rules/index.js';
import type { RuleScope } from '../preflight-api/types.js';

const SCOPES: Record<RuleScope, string> = {
  files: 'the recipe, cluster and env files (same answer on every node)',
  snapshot: "the model's config.json (from this machine's snapshot, else a node's)",
  'local-node': "each node's own files, devices, ports and snapshot (over ssh on every node; --local: this machine)",
  cluster: 'every node at once: what must agree across the cluster (not with --local)',
};

const FAMILIES: Record<string, string> = { dsv41: 'DeepSeek-V4.1', dsv4: 'DeepSeek-V4', other: 'other models' };

export const RULES_DOC_BEGIN =
  "<!-- rules:begin (generated from src/preflight/rules and the stacks' rooms; npm run docs:preflight) -->";
export const RULES_DOC_END = '<!-- rules:end -->';

export async function rulesMarkdown(): Promise<string> {
  const out: string[] = [];
  for (const r of await preflightRules()) {
    const families = r.families ? ` · ${r.families.map((f) => FAMILIES[f]).join(', ')} only` : '';
    out.push(
      `### \`${r.id}\``,
      '',
      `${r.title[0]!.toUpperCase()}${r.title.slice(1)}.`,
      '',
      `- Applies to: ${r.engines.join(', ')}${families}`,
      `- Severity: ${r.severity}${r.also ? `; ${r.also}` : ''}`,
      `- Looks at: ${SCOPES[r.scope]}`,
      `- Evidence: ${r.evidence}`,
      `- Fix: ${r.fix}`,
      '',
    );
  }
  return out.join('\n');
}

/** `doc` with the text between the markers replaced by the generated reference. */
export async function withRulesSection(doc: string): Promise<string> {
  const a = doc.indexOf(RULES_DOC_BEGIN);
  const b = doc.indexOf(RULES_DOC_END);
  if (a < 0 || b < a) throw new Error('docs/preflight.md lacks the rules markers');
  return `${doc.slice(0, a + RULES_DOC_BEGIN.length)}\n\n${await rulesMarkdown()}\n${doc.slice(b)}`;
}

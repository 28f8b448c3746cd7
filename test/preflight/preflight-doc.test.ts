import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../../src/addon/index.js';
import { preflightRules } from '../../src/preflight/index.js';
import { withRulesSection } from '../../src/preflight/rules-doc.js';

const RULES = await preflightRules();

test('docs/preflight.md lists every rule as the rules describe themselves (npm run docs:preflight)', async () => {
  const doc = readFileSync(join(packageRoot(), 'docs', 'preflight.md'), 'utf8');
  assert.equal(await withRulesSection(doc), doc);
  for (const r of RULES) assert.ok(doc.includes(`### \`${r.id}\``), r.id);
});

test('rule metadata is complete and ids are unique', () => {
  assert.equal(new Set(RULES.map((r) => r.id)).size, RULES.length);
  for (const r of RULES) {
    assert.match(r.id, /^[a-z0-9]+\.[a-z0-9-]+$/, r.id);
    assert.ok(r.engines.length > 0 && r.title && r.evidence.length > 20 && r.fix, r.id);
  }
});

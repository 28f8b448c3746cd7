// Rewrites the generated rule reference in docs/preflight.md from the rules' metadata.
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../src/native/index.js';
import { withRulesSection } from '../src/preflight/rules-doc.js';

const path = join(packageRoot(), 'docs', 'preflight.md');
const next = withRulesSection(readFileSync(path, 'utf8'));
writeFileSync(`${path}.partial`, next);
renameSync(`${path}.partial`, path);
process.stdout.write(`updated ${path}\n`);

// Rewrites the generated rule reference in docs/preflight.md from the rules' metadata.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../src/addon/index.js';
import { writeNewFile } from '../src/files/new-file.js';
import { withRulesSection } from '../src/preflight/rules-doc.js';

const path = join(packageRoot(), 'docs', 'preflight.md');
const next = await withRulesSection(readFileSync(path, 'utf8'));
writeNewFile(path, next);
process.stdout.write(`updated ${path}\n`);

// bench/RESULTS.md is a one-page summary: each benchmark's current ratio to its baseline,
// quoted from a dated run file in bench/runs/ that exists and says it, every run file listed,
// and the chart drawn from the table as committed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chartFromResults, summaryRows } from '../../bench/results-chart.js';
import { packageRoot } from '../../src/addon/index.js';

const bench = join(packageRoot(), 'bench');
const results = readFileSync(join(bench, 'RESULTS.md'), 'utf8');

test('RESULTS.md is one page: a summary row per benchmark, each quoting a run file that says it', () => {
  assert.ok(results.split('\n').length <= 90, 'RESULTS.md is a summary, not the log: runs go in bench/runs/');
  const rows = summaryRows(results);
  assert.ok(rows.length >= 10);
  for (const r of rows) {
    assert.match(r.run, /^runs\/\d{4}-\d{2}-\d{2}-[a-z0-9-]+\.md$/, r.benchmark);
    assert.ok(existsSync(join(bench, r.run)), `${r.run} exists`);
    const run = readFileSync(join(bench, r.run), 'utf8');
    assert.ok(run.includes(r.ratioText), `${r.run} says ${r.ratioText} (${r.benchmark})`);
    assert.ok(run.includes(r.date), `${r.run} is of ${r.date} (${r.benchmark})`);
    assert.ok(r.run.startsWith(`runs/${r.date}-`), `${r.run} is named by its date`);
    assert.ok(r.command.length > 0);
  }
});

test('every dated run in bench/runs/ is a section of its own, listed in RESULTS.md', () => {
  const runs = readdirSync(join(bench, 'runs')).sort();
  assert.ok(runs.length > 0);
  for (const f of runs) {
    assert.match(f, /^\d{4}-\d{2}-\d{2}-[a-z0-9-]+\.md$/);
    assert.ok(results.includes(`(runs/${f})`), `RESULTS.md lists runs/${f}`);
    assert.match(readFileSync(join(bench, 'runs', f), 'utf8'), /^## /, `${f} starts with its heading`);
  }
});

test('charts/summary.svg is what the summary table draws (node dist/bench/results-chart.js)', () => {
  assert.equal(readFileSync(join(bench, 'charts', 'summary.svg'), 'utf8'), chartFromResults(bench));
  assert.ok(results.includes('](charts/summary.svg)'));
});

test('a summary row the chart cannot read is refused by name', () => {
  const head =
    '| benchmark | baseline (same run) | ratio | target | kind | date | command | run |\n|---|---|---|---|---|---|---|---|\n';
  assert.throws(
    () => summaryRows(`${head}| x | y | fast | ≥ 1 | speed | 2026-12-01 | \`c\` | [r](runs/r.md) |\n`),
    /summary row/,
  );
  assert.throws(
    () => summaryRows(`${head}| x | y | 1.2 | > 1 | speed | 2026-12-01 | \`c\` | [r](runs/r.md) |\n`),
    /summary row/,
  );
  assert.throws(() => summaryRows('no table here'), /no summary table/);
  const [row] = summaryRows(`${head}| x | y | 1.20 | ≤ 3 | time | 2026-12-01 | \`c\` | [r](runs/r.md) |\n`);
  assert.deepEqual(row.target, { op: '≤', value: 3 });
  assert.equal(row.ratioText, '1.20');
});

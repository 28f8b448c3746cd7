// Draws bench/charts/summary.svg from the summary table of bench/RESULTS.md: one bar per
// benchmark, its ratio to the baseline of the same run, the target marked on the bar.
//   node dist/bench/results-chart.js            writes the chart
//   node dist/bench/results-chart.js --check    exit 1 if the committed chart is not what the table draws
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface SummaryRow {
  benchmark: string;
  baseline: string;
  ratio: number;
  /** The ratio as written in the table (and in the run file it quotes). */
  ratioText: string;
  target?: { op: '≤' | '≥'; value: number };
  kind: 'time' | 'speed';
  date: string;
  command: string;
  /** The run file, relative to bench/. */
  run: string;
}

const COLUMNS = ['benchmark', 'baseline (same run)', 'ratio', 'target', 'kind', 'date', 'command', 'run'];

function cells(line: string): string[] {
  return line
    .replace(/^\|/, '')
    .replace(/\|$/, '')
    .split('|')
    .map((c) => c.trim());
}

/** The rows of the summary table: the first table whose header is COLUMNS. */
export function summaryRows(markdown: string): SummaryRow[] {
  const lines = markdown.split('\n');
  const head = lines.findIndex((l) => l.startsWith('|') && cells(l).join('|') === COLUMNS.join('|'));
  if (head === -1) throw new Error(`RESULTS.md: no summary table with the columns ${COLUMNS.join(', ')}`);
  const rows: SummaryRow[] = [];
  for (const line of lines.slice(head + 2)) {
    if (!line.startsWith('|')) break;
    const [benchmark, baseline, ratioText, target, kind, date, command, run] = cells(line);
    const ratio = Number(ratioText);
    const t = /^(≤|≥) ([0-9.]+)$/.exec(target);
    const link = /^\[[^\]]+\]\(([^)]+)\)$/.exec(run);
    if (!Number.isFinite(ratio) || (target !== '' && !t) || (kind !== 'time' && kind !== 'speed') || !link)
      throw new Error(`RESULTS.md: a summary row is not ratio / "≤ N" or "≥ N" / time or speed / [run](file): ${line}`);
    rows.push({
      benchmark,
      baseline,
      ratio,
      ratioText,
      ...(t ? { target: { op: t[1] as '≤' | '≥', value: Number(t[2]) } } : {}),
      kind,
      date,
      command: command.replace(/^`|`$/g, ''),
      run: link[1],
    });
  }
  return rows;
}

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function met(r: SummaryRow): boolean | undefined {
  if (!r.target) return undefined;
  return r.target.op === '≤' ? r.ratio <= r.target.value : r.ratio >= r.target.value;
}

/** A horizontal bar chart: the ratio per row (log scale around 1), the target as a tick. */
export function summarySvg(rows: SummaryRow[]): string {
  const W = 900,
    L = 470,
    R = 60,
    T = 50,
    BAR = 22,
    GAP = 8;
  const H = T + rows.length * (BAR + GAP) + 40;
  const values = rows.flatMap((r) => [r.ratio, r.target?.value ?? r.ratio]);
  const lo = Math.min(0.5, ...values);
  const hi = Math.max(2, ...values) * 1.1;
  const px = (v: number): number => L + ((Math.log(v) - Math.log(lo)) / (Math.log(hi) - Math.log(lo))) * (W - L - R);
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2}" y="22" text-anchor="middle" font-size="15">Each benchmark against its baseline, same run (bench/RESULTS.md)</text>`,
    `<text x="${W / 2}" y="40" text-anchor="middle" fill="#555">ratio, log scale; time: lower is better, speed: higher is better; | target (green: met, red: not)</text>`,
  ];
  for (const tick of [0.5, 1, 2, 4, 8].filter((v) => v >= lo && v <= hi)) {
    out.push(
      `<line x1="${px(tick).toFixed(1)}" y1="${T}" x2="${px(tick).toFixed(1)}" y2="${H - 30}" stroke="${tick === 1 ? '#000' : '#ddd'}"/>`,
    );
    out.push(`<text x="${px(tick).toFixed(1)}" y="${H - 14}" text-anchor="middle">${tick}x</text>`);
  }
  rows.forEach((r, i) => {
    const y = T + i * (BAR + GAP);
    const ok = met(r);
    const color = ok === undefined ? '#1f77b4' : ok ? '#2ca02c' : '#d62728';
    const x0 = px(Math.min(1, r.ratio));
    const x1 = px(Math.max(1, r.ratio));
    out.push(
      `<text x="${L - 8}" y="${y + BAR / 2 + 4}" text-anchor="end">${esc(`${r.benchmark.replace(/`/g, '')} (${r.kind})`.slice(0, 72))}</text>`,
    );
    out.push(
      `<rect x="${x0.toFixed(1)}" y="${y}" width="${Math.max(1, x1 - x0).toFixed(1)}" height="${BAR}" fill="${color}"/>`,
    );
    out.push(`<text x="${(x1 + 4).toFixed(1)}" y="${y + BAR / 2 + 4}">${esc(r.ratioText)}x</text>`);
    if (r.target) {
      const tx = px(r.target.value).toFixed(1);
      out.push(`<line x1="${tx}" y1="${y - 3}" x2="${tx}" y2="${y + BAR + 3}" stroke="black" stroke-width="2"/>`);
    }
  });
  out.push('</svg>');
  return out.join('\n') + '\n';
}

const benchDir = (): string => fileURLToPath(new URL('../../bench/', import.meta.url));

export function chartFromResults(dir = benchDir()): string {
  return summarySvg(summaryRows(readFileSync(join(dir, 'RESULTS.md'), 'utf8')));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const path = join(benchDir(), 'charts', 'summary.svg');
  const svg = chartFromResults();
  if (process.argv.includes('--check')) {
    const same = readFileSync(path, 'utf8') === svg;
    if (!same) process.stderr.write(`${path} is not what RESULTS.md draws: run node dist/bench/results-chart.js\n`);
    process.exitCode = same ? 0 : 1;
  } else {
    writeFileSync(path, svg);
  }
}

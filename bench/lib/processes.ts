// Whole-process timing: runs commands in turn (A B C A B C ...) after a warm-up, so drift on a
// shared, noisy machine hits every command alike, and reports the median wall time of each and
// the median of the per-round ratios against a baseline.
import { spawnSync } from 'node:child_process';
import { cpus, totalmem } from 'node:os';

export interface ProcessCase {
  name: string;
  argv: string[];
}

export interface ProcessTiming {
  name: string;
  argv: string[];
  medianMs: number;
  minMs: number;
  maxMs: number;
  /** Median over rounds of (this / baseline) wall time; 1 for the baseline itself. */
  ratioToBaseline: number;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function runOnce(c: ProcessCase): number {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(c.argv[0], c.argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 1 << 28 });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.status !== 0) {
    throw new Error(`${c.name} exited ${r.status}: ${r.stderr.toString().slice(0, 500)}`);
  }
  return ms;
}

/** The first case is the baseline. */
export function compareProcesses(cases: ProcessCase[], rounds = 15, warmup = 2): ProcessTiming[] {
  for (let i = 0; i < warmup; i++) for (const c of cases) runOnce(c);
  const times = cases.map(() => [] as number[]);
  for (let r = 0; r < rounds; r++) cases.forEach((c, i) => times[i].push(runOnce(c)));
  return cases.map((c, i) => ({
    name: c.name,
    argv: c.argv,
    medianMs: median(times[i]),
    minMs: Math.min(...times[i]),
    maxMs: Math.max(...times[i]),
    ratioToBaseline: median(times[i].map((t, r) => t / times[0][r])),
  }));
}

export function machineInfo() {
  return {
    node: process.version,
    arch: process.arch,
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? 'unknown',
    memGiB: Math.round(totalmem() / 2 ** 30),
  };
}

export function timingTable(rows: ProcessTiming[]): string {
  const lines = [
    '| command | median ms | min ms | max ms | ratio to baseline (median of rounds) |',
    '|---|---|---|---|---|',
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.name} | ${r.medianMs.toFixed(1)} | ${r.minMs.toFixed(1)} | ${r.maxMs.toFixed(1)} | ${r.ratioToBaseline.toFixed(2)} |`,
    );
  }
  return lines.join('\n');
}

// Turns the JSON reports of bench/run-gather.sh into the markdown tables of bench/RESULTS.md.
//   node dist/bench/summarize.js bench/out/cold-page.json [...]
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import type { GatherBenchReport } from '../src/bench/gather-bench.js';

const fmt = (n: number | undefined, d = 0): string => (n === undefined ? '-' : n.toFixed(d));
const x = (a: number | undefined, b: number | undefined): string => (a !== undefined && b ? `${(a / b).toFixed(2)}` : '-');

for (const file of process.argv.slice(2)) {
  const r = JSON.parse(readFileSync(file, 'utf8')) as GatherBenchReport;
  console.log(`\n#### ${basename(file, '.json')}\n`);
  console.log(`${r.cache}. Layer ${r.layer}, ${r.rows} rows, ${r.seconds} s per case. ${r.fio ?? 'no fio'}. Recommended threads: ${r.recommendedThreads}.\n`);
  console.log('| source | threads | batch | rows/s | reads/row | reads/s | p50 ms | p99 ms | naive rows/s | rows/s ÷ naive | fio IOPS | rows/s ÷ fio | reads/s ÷ fio | cached after |');
  console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const c of r.results) {
    const src = `${c.variant ?? c.source}${c.layout ? `/${c.layout}${c.direct ? '+direct' : ''}` : ''}${c.reader === 'mmap' ? ' (mmap)' : ''}`;
    console.log(
      `| ${src} | ${c.threads} | ${c.batch} | ${fmt(c.rowsPerSec)} | ${fmt(c.readsPerRow, 2)} | ${fmt(c.readsPerSec)} | ${fmt(c.p50Ms, 2)} | ${fmt(c.p99Ms, 2)} | ` +
        `${fmt(c.baselines.naive?.rowsPerSec)} | ${x(c.rowsPerSec, c.baselines.naive?.rowsPerSec)} | ${fmt(c.baselines.fio?.iops)} | ` +
        `${x(c.rowsPerSec, c.baselines.fio?.iops)} | ${x(c.readsPerSec, c.baselines.fio?.iops)} | ${c.cachedAfter === undefined ? '-' : (c.cachedAfter * 100).toFixed(0) + '%'} |`,
    );
  }
}

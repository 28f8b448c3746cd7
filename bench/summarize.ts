// Turns `spark bench gather --json` reports into the markdown tables of the run files in bench/runs/.
//   node dist/bench/summarize.js bench/out/cold-snapshot.json [...]
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import type { GatherBenchReport } from '../src/gather-bench/gather-bench.js';

const fmt = (n: number | undefined, d = 0): string => (n === undefined ? '-' : n.toFixed(d));
const pct = (n: number | undefined): string => (n === undefined ? '-' : `${(n * 100).toFixed(0)}%`);

for (const file of process.argv.slice(2)) {
  const r = JSON.parse(readFileSync(file, 'utf8')) as GatherBenchReport;
  const ceiling = r.ceiling
    ? `device ceiling ${Math.round(r.ceiling.iops)} IOPS (fio ${r.ceiling.engine}, direct, ${r.ceiling.jobs} x QD ${r.ceiling.iodepth})`
    : (r.ceilingNote ?? 'no device ceiling');
  console.log(`\n#### ${basename(file, '.json')}\n`);
  console.log(
    `${r.sourceKind}, layer ${r.layer}, ${r.rows} rows, ${r.seconds} s per case; ${r.cache}. ${ceiling}` +
      `${r.ceilingExceeded ? ` (a case took ${r.ceilingExceeded.toFixed(2)}x it: measured low)` : ''}. ` +
      `Load average ${r.machine.loadAvgBefore[0].toFixed(1)} before, ${r.machine.loadAvgAfter[0].toFixed(1)} after. Recommended threads: ${r.recommendedThreads} (${r.recommendedFor}).\n`,
  );
  console.log(
    '| variant (reader) | threads | batch | rows/s | p50 ms | p99 ms | reads/row | reads/s | dev pages/s | rows/ceil | reads/ceil | CPU us/row | psync IOPS | cached after | mapped |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const c of r.results) {
    const cache = c.mia
      ? c.mia.cacheSlots > 0
        ? `, ${c.mia.budgetBytes / 2 ** 20} MiB ${c.mia.ways}-way cache, ${pct(c.mia.hitRate)} hits`
        : ', no cache'
      : '';
    const name = `${c.variant}${c.layout ? `/${c.layout}` : ''}${c.direct ? '+direct' : ''} (${c.reader}${cache})${c.coldValid === false ? ' cold?' : ''}`;
    const used = c.ofCeiling?.reads ?? c.ofCeiling?.devicePages;
    console.log(
      `| ${name} | ${c.threads} | ${c.batch} | ${fmt(c.rowsPerSec)} | ${fmt(c.p50Ms, 2)} | ${fmt(c.p99Ms, 2)} | ${fmt(c.readsPerRow, 2)} | ${fmt(c.readsPerSec)} | ` +
        `${fmt(c.devicePagesPerSec)} | ${fmt(c.ofCeiling?.rows, 2)} | ${fmt(used, 2)} | ${fmt(c.cpuUsPerRow, 1)} | ${fmt(c.baselines.fio?.iops)} | ${pct(c.cachedAfter)} | ${pct(c.mappedFraction)} |`,
    );
  }
}

// A dense pack of one layer (bench/lib/fixtures.ts) whose data file carries the Mia stack's
// binary header, for bench/run-mia.sh.
//   node dist/bench/make-mia-pack.js DIR ROWS
import { makeBenchPack } from './lib/fixtures.js';
import { stampMiaHeaders } from './lib/mia-header.js';

const [dir, rows] = [process.argv[2], Number(process.argv[3])];
if (!dir || !Number.isSafeInteger(rows) || rows <= 0) {
  console.error('usage: node dist/bench/make-mia-pack.js DIR ROWS');
  process.exit(2);
}
makeBenchPack(dir, 1, rows, 'dense');
const stamped = await stampMiaHeaders(dir);
console.error(
  `${dir}: ${rows} rows; Mia header written to ${stamped.length ? stamped.join(', ') : 'nothing (already there)'}`,
);

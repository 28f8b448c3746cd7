// `npm run demo`: the main job end to end on a synthetic DSV4.1-shaped snapshot, each step a
// real `spark` command. Pass a directory to keep the files; otherwise a temp dir is removed.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { processIo } from '../src/terminal/io.js';
import { runCli } from '../src/main.js';

const keep = process.argv[2];
const root = keep ?? mkdtempSync(join(tmpdir(), 'spark-demo-'));
const snapshot = join(root, 'snapshot');
const copy = join(root, 'engram-r0of2');
const packed = join(root, 'engram-r0of2-dense');

const steps: [string, string[]][] = [
  [
    'Write a synthetic snapshot (2 Engram layers, prime-rule row counts)',
    ['synth', snapshot, '--vocab', '4000', '--shards', '4'],
  ],
  ['Validate every header and report the Engram tables', ['inspect', snapshot]],
  [
    'The rows each of 4 ranks owns (floor split, as SGLang tiles): SPARK_ENGRAM_ROWS as the overlay reads it, layer:lo:hi',
    ['engram-ranges', snapshot, '--world', '4', '--all'],
  ],
  [
    'The same by whole (order, head) sub-tables (as vLLM tiles)',
    ['engram-ranges', snapshot, '--world', '4', '--all', '--split', 'heads'],
  ],
  [
    "Copy rank 0 of 2's Engram rows to node-local disk: the serving overlay's sparse copy (SPARK_ENGRAM_DIR)",
    ['pack', snapshot, '--out', copy, '--rank', '0', '--world', '2'],
  ],
  ['Run it again: a complete copy is a no-op', ['pack', snapshot, '--out', copy, '--rank', '0', '--world', '2']],
  [
    'Verify the copy: manifest, every checksum, every row against the snapshot',
    ['verify', copy, '--source', snapshot, '--full'],
  ],
  [
    "The same rows in spark's one-read layout (weight and scale side by side)",
    ['pack', snapshot, '--out', packed, '--rank', '0', '--world', '2', '--layout', 'dense'],
  ],
  ['Verify the dense pack the same way', ['verify', packed, '--source', snapshot, '--full']],
  [
    'Read rows through the row store: ids at both ends of layer 1, one repeated',
    ['rows', snapshot, '--layer', '1', '--ids', '0,17,17', '--json'],
  ],
  [
    'Gather the same rows from the dense pack (one local read per row): the same bytes',
    ['rows', packed, '--layer', '1', '--ids', '0,17,17', '--json'],
  ],
  [
    'A short gather benchmark: the row store against the naive loop (and fio where installed)',
    ['bench', 'gather', snapshot, '--threads', '4,16', '--batch', '144,4096', '--seconds', '1'],
  ],
];

const io = processIo();
let failed = 0;
try {
  for (const [title, argv] of steps) {
    io.stdout(`\n== ${title}\n$ spark ${argv.join(' ')}\n`);
    const code = await runCli(argv, io);
    if (code !== 0) {
      io.stderr(`demo step failed with exit code ${code}\n`);
      failed = code;
      break;
    }
  }
} finally {
  if (!keep) rmSync(root, { recursive: true, force: true });
}
process.exitCode = failed;

// Gives a dense pack's data files the Mia stack's binary header (src/stacks/mia/mia-shard.ts) in
// place of the JSON one packs of format version 1 carry: the rows after byte 4096 are already
// where the stack reads them, so spark's row store (which reads the manifest) and the Mia
// reader then read the very same file. For benchmarks and tests only: a file already carrying
// the right Mia header is left alone.
import { closeSync, openSync, readSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import {
  decodeMiaHeader,
  encodeMiaHeader,
  MIA_HEADER_BYTES,
  MIA_ROW_BYTES,
  miaMismatch,
} from '../../src/stacks/mia/mia-shard.js';
import { readPackedManifest } from '../../src/stacks/packed/packed-manifest.js';

export async function stampMiaHeaders(dir: string): Promise<string[]> {
  const m = await readPackedManifest(dir);
  const stamped: string[] = [];
  for (const e of m.layers) {
    if (e.layout !== 'dense' || e.rowBytes !== MIA_ROW_BYTES)
      throw new Error(
        `${dir}: layer ${e.layer} is ${e.layout} with ${e.rowBytes}-byte rows; the Mia reader reads dense 264-byte rows only`,
      );
    const path = join(dir, e.file);
    const fd = openSync(path, 'r+');
    try {
      const head = Buffer.alloc(MIA_HEADER_BYTES);
      readSync(fd, head, 0, MIA_HEADER_BYTES, 0);
      const want = { layer: e.layer, lo: e.start, hi: e.end, rows: e.rows };
      if (miaMismatch(decodeMiaHeader(head), Infinity, want) === undefined) continue;
      writeSync(fd, encodeMiaHeader({ ...want, rowBytes: MIA_ROW_BYTES }), 0, MIA_HEADER_BYTES, 0);
      stamped.push(path);
    } finally {
      closeSync(fd);
    }
  }
  return stamped;
}

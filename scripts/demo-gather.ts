// The row store part of `npm run demo`: packs a small table, gathers a token's 24 ids and a
// 6-token block, checks the bytes against the documented row function, and shows the counters.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeBenchPack } from '../bench/lib/fixtures.js';
import { drawBatch, idModel, rng } from '../src/engram/bench-ids.js';
import { openRowSource } from '../src/engram/row-source.js';
import { synthRow } from '../src/engram/synth-rows.js';

export async function demoGather(log: (line: string) => void = console.log): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'spark-demo-gather-'));
  try {
    const rows = 200_000;
    makeBenchPack(join(dir, 'pack'), 1, rows, 'page');
    const src = await openRowSource(join(dir, 'pack'), { threads: 16 });
    const model = idModel(rows, 0, rows);
    const random = rng(1);
    for (const batch of [24, 144, 49152]) {
      const ids = drawBatch(model, batch, random);
      const t0 = performance.now();
      const out = await src.store.gather(1, ids);
      const ms = performance.now() - t0;
      const ok = ids.every((id, i) => out.subarray(i * 264, (i + 1) * 264).equals(synthRow(1, id, 256)));
      log(`gather ${batch} rows: ${ms.toFixed(2)} ms, bytes ${ok ? 'exact' : 'WRONG'}`);
      if (!ok) throw new Error('row bytes differ');
    }
    const s = src.store.stats();
    log(`counters: ${s.rows} rows, ${s.reads} reads, ${s.duplicates} duplicates removed, ${s.merged} merged into shared reads`);
    await src.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

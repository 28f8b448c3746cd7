// A Mia shard's name says its rank and world, and its header's rows must be that rank's: the
// stack's reader (here spark's own drop-in, librow_store.so, attaching it as the SGLang lane
// does with the floor split's range) aborts the rank on another rank's rows under the name.
// spark verify, preflight's mia.packs rule and spark's Python reader must say the same of the
// same directory: another rank's shards under a middle rank's names are refused by all three,
// and that rank's own shards pass all three. Rank 0 and the last rank, each way, are in
// test/long/mia-shard-rank-cases.test.ts.
import { test } from 'node:test';
import { needs } from '../../helpers/external-tool.js';
import { shardRankWorld, WRONG_RANK_CASES } from '../../helpers/mia-shard-rank.js';

test("another rank's shards under a middle rank's names: verify, preflight's mia.packs and librow_store.so's attach all refuse them; the rank's own pass all three", async (ctx) => {
  if (!needs(ctx, 'numpy')) return;
  const { refusedByAll, passesAll } = await shardRankWorld();
  await refusedByAll(WRONG_RANK_CASES.find((c) => c.name === 'a middle rank')!);
  await passesAll(2);
});

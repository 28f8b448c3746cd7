// Every rank of test/stacks/mia/mia-shard-rank.test.ts (which keeps a middle rank in npm test):
// another rank's shards under the names of rank 0, a middle rank and the last rank are refused
// by spark verify, preflight's mia.packs, librow_store.so's attach and spark's Python reader,
// and each rank's own shards pass them all. A long trial (npm run test:long).
import { test } from 'node:test';
import { needs } from '../helpers/external-tool.js';
import { shardRankWorld, WRONG_RANK_CASES } from '../helpers/mia-shard-rank.js';

test("another rank's shards under a rank's names: verify, preflight's mia.packs and librow_store.so's attach all refuse them; the rank's own pass all three", async (ctx) => {
  if (!needs(ctx, 'numpy')) return;
  const { refusedByAll, passesAll } = await shardRankWorld();
  for (const c of WRONG_RANK_CASES) await refusedByAll(c);

  // The rank's own shards: all three accept them.
  for (const rank of [0, 2, 3]) await passesAll(rank);
});

// `spark preflight` end to end, beside test/preflight/preflight-cli.test.ts: the variants of the
// users' recipes that must fail, each naming the key, and a snapshot with a truncated shard.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import { makeSnapshot } from '../helpers/synth.js';
import { edit, MIA_ENV, world, write } from '../helpers/preflight.js';
import { args, lineOf, mustFail } from '../helpers/preflight-cli.js';

test('variants that must fail, each naming the key', async () => {
  const w = await world();
  const cfg = JSON.parse(readFileSync(join(w.snapshotDir, 'config.json'), 'utf8')) as {
    text_config: { engram_num_embeddings: number[] };
  };
  const [n1, n14] = cfg.text_config.engram_num_embeddings;

  const rows = edit(w.dsv41Text, 'SPARK_ENGRAM_MODE', `SPARK_ENGRAM_ROWS = "1:0:${n1},14:0:${n14}"\nSPARK_ENGRAM_MODE`);
  const rowsFile = w.recipe(rows);
  await mustFail(
    args(w, rowsFile),
    'engram.ranges-tile',
    'SPARK_ENGRAM_ROWS',
    new RegExp(`recipe\\.toml:${lineOf(rows, 'SPARK_ENGRAM_ROWS = "')}$`),
  );

  const two = w.writeCluster({ nodes: 2 });
  const seqs = edit(w.eugrText, '"--max-num-seqs", "6"', '"--max-num-seqs", "8"');
  await mustFail(
    args(w, w.recipe(seqs), ['--cluster', two]),
    'vllm.cudagraph-capture',
    '--max-cudagraph-capture-size',
    new RegExp(`:${lineOf(seqs, '"--max-cudagraph-capture-size", "36"')}$`),
  );

  const gmu = edit(w.eugrText, '"--gpu-memory-utilization", "0.78"', '"--gpu-memory-utilization", "0.92"');
  await mustFail(
    args(w, w.recipe(gmu), ['--cluster', two]),
    'memory.utilization-ceiling',
    '--gpu-memory-utilization',
    new RegExp(`:${lineOf(gmu, '"0.92"')}$`),
  );

  const mia = edit(
    readFileSync(MIA_ENV, 'utf8'),
    /^PYTORCH_CUDA_ALLOC_CONF=.*$/m,
    'PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True',
  );
  const miaFile = write(join(w.root, 'mia-true.env'), mia);
  await mustFail(
    args(w, w.recipe(w.dsv41Text), ['--env', miaFile]),
    'alloc.expandable-segments',
    'PYTORCH_CUDA_ALLOC_CONF',
    new RegExp(`mia-true\\.env:${lineOf(mia, 'PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True')}$`),
    { HOME: '/h' },
  );

  const start = w.dsv41Text.indexOf('args = [');
  const end = w.dsv41Text.indexOf(']\n', start) + 2;
  const moved = (w.dsv41Text.slice(0, start) + w.dsv41Text.slice(end)).replace(
    'read_only = true\n',
    `read_only = true\n${w.dsv41Text.slice(start, end)}`,
  );
  await mustFail(args(w, w.recipe(moved)), 'toml.swallowed-key', 'args', new RegExp(`:${lineOf(moved, 'args = [')}$`));

  const three = edit(w.dsv41Text, 'required_nodes = 4', 'required_nodes = 3');
  await mustFail(
    args(w, w.recipe(three)),
    'parallel.nodes',
    'required_nodes',
    new RegExp(`:${lineOf(three, 'tensor_parallel_size = 4')}$`),
  );
});

test('a snapshot with one shard truncated: exit 1 naming the shard', async () => {
  const w = await world();
  const dir = join(w.root, 'snap-cli-truncated');
  makeSnapshot({ dir });
  const shard = join(dir, 'model-00002-of-00003.safetensors');
  truncateSync(shard, statSync(shard).size - 4096);
  const f = await mustFail(
    args(w, w.recipe(w.dsv41Text), ['--snapshot', dir]),
    'snapshot.complete',
    'model-00002-of-00003.safetensors',
  );
  assert.match(f.message, /E_SHARD_TRUNCATED|E_SAFETENSORS/);
});

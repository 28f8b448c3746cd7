// Every rule, one fixture that passes and one that fails. Each case runs the rule alone
// (--only) against a world built in a temp dir (test/helpers/preflight.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdirSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RULES, type PreflightOptions } from '../src/preflight/index.js';
import { makeSnapshot } from './helpers/synth.js';
import { busyPort, edit, MIA, MIA_ENV, preflight, repoFile, REVISION, world, write, type World } from './helpers/preflight.js';
import { writeMiaPack } from './helpers/mia-pack.js';
import { LIBRARIES } from './helpers/engine-lib.js';
import { packageRoot } from '../src/native/index.js';
import { mountRamfs } from './helpers/tmpfs.js';
import { seedYaml } from './helpers/sparkrun.js';

interface RuleCase {
  rule: string;
  pass(w: World): Promise<PreflightOptions> | PreflightOptions;
  fail(w: World): Promise<PreflightOptions> | PreflightOptions;
  /** The failing finding's message. */
  expect: RegExp;
  /** The failing finding's where (default: any). */
  where?: RegExp;
  /** Severity of the failing finding (default: the rule's). */
  severity?: 'error' | 'warn';
  env?: NodeJS.ProcessEnv;
}

const moveArgsBelowMounts = (text: string): string => {
  const start = text.indexOf('args = [');
  const end = text.indexOf(']\n', start) + 2;
  const block = text.slice(start, end);
  return (text.slice(0, start) + text.slice(end)).replace('read_only = true\n', `read_only = true\n${block}`);
};

/** One row of the layer-1 table short of nothing: the full range of both synthetic tables. */
function fullRange(w: World): string {
  const cfg = JSON.parse(readFileSync(join(w.snapshotDir, 'config.json'), 'utf8')) as { text_config: { engram_num_embeddings: number[] } };
  const [a, b] = cfg.text_config.engram_num_embeddings;
  return `1:0:${a},14:0:${b}`;
}

/** A copy of the world's snapshot with its first shard one byte short. */
function truncatedSnapshot(w: World): string {
  const dir = join(w.root, 'snap-truncated');
  if (!existsSync(dir)) {
    makeSnapshot({ dir });
    const shard = join(dir, 'model-00001-of-00003.safetensors');
    truncateSync(shard, statSync(shard).size - 1);
  }
  return dir;
}

/** A snapshot whose config names Engram layers 1 and 14 but which holds only layer 1's table. */
function noEngramSnapshot(w: World): string {
  const dir = join(w.root, 'snap-one-layer');
  if (!existsSync(dir)) {
    makeSnapshot({ dir, layers: [1] });
    const path = join(dir, 'config.json');
    const cfg = JSON.parse(readFileSync(path, 'utf8'));
    const full = JSON.parse(readFileSync(join(w.snapshotDir, 'config.json'), 'utf8'));
    cfg.text_config = full.text_config;
    writeFileSync(path, JSON.stringify(cfg));
  }
  return dir;
}

/** The world's Engram tables: layer -> rows, from its config.json. */
function tables(w: World): [number, number][] {
  const cfg = JSON.parse(readFileSync(join(w.snapshotDir, 'config.json'), 'utf8')) as {
    text_config: { engram_layer_ids: number[]; engram_num_embeddings: number[] };
  };
  return cfg.text_config.engram_layer_ids.map((l, i) => [l, cfg.text_config.engram_num_embeddings[i]!]);
}

/** A well-formed manifest of rank `rank` of 4 (floor split) for the world's tables; `rows` overrides layer 1's count. */
const manifest = (w: World, rank: number, rows?: number) => {
  const layers = tables(w).map(([layer, n0]) => {
    const n = layer === 1 && rows !== undefined ? rows : n0;
    const [start, end] = [Math.floor((n * rank) / 4), Math.floor((n * (rank + 1)) / 4)];
    return {
      layer, rows: n, start, end, file: `engram-l${layer}-r${rank}of4.bin`, rowBytes: 264, stride: 264, dataOffset: 4096,
      weightDtype: 'F8_E4M3', scaleDtype: 'F8_E8M0', layout: 'dense', checksum: { algorithm: 'crc32', chunkRows: 1024, values: Array.from({ length: Math.ceil((end - start) / 1024) }, () => '0badf00d') },
    };
  });
  return JSON.stringify({ format: 'spark-engram-packed', version: 1, rank, world: 4, split: 'floor', source: { snapshot: '/x', revision: REVISION, files: [] }, layers });
};

const CASES: RuleCase[] = [
  {
    rule: 'toml.swallowed-key',
    pass: (w) => w.options(w.recipe(w.dsv41Text)),
    fail: (w) => w.options(w.recipe(moveArgsBelowMounts(w.dsv41Text))),
    expect: /^args on line \d+ is inside the \[\[extra_mounts\]\] table/,
    where: /recipe\.toml:\d+$/,
  },
  {
    rule: 'toml.unknown-key',
    pass: (w) => w.options(w.recipe(w.dsv41Text)),
    fail: (w) => w.options(w.recipe(edit(w.dsv41Text, 'shm_size = "32gb"', 'shm_size = "32gb"\nshm_sise = "64gb"'))),
    expect: /unknown key shm_sise/,
  },
  {
    rule: 'env.undefined-variable',
    pass: (w) => w.options(w.recipe(w.dsv41Text), { env: write(join(w.root, 'ok.env'), 'A=1\nB=$A/x\nC=${NOPE:-d}\n') }),
    fail: (w) => w.options(w.recipe(w.dsv41Text), { env: write(join(w.root, 'bad.env'), 'A=1\nB=$NOPE/x\n') }),
    expect: /\$NOPE is not defined/,
    where: /bad\.env:2$/,
  },
  {
    rule: 'env.compose-only',
    pass: (w) => w.options(w.recipe(w.dsv41Text), { env: write(join(w.root, 'ok-compose.env'), 'NCCL_DEBUG=WARN\nDSV41_IO_THREADS=96\n') }),
    fail: (w) => w.options(w.recipe(w.dsv41Text), { env: write(join(w.root, 'compose.env'), 'NCCL_DEBUG=WARN\nTP_SIZE=3\n') }),
    expect: /^TP_SIZE is read by the compose file or start script/,
    where: /compose\.env:2$/,
  },
  {
    rule: 'sparkrun.not-run',
    pass: (w) => w.options(write(join(w.root, 'sparkrun-seed.yaml'), seedYaml(w, 'dsv41-flash-4x-sglang-aiden16'))),
    fail: (w) => w.options(write(join(w.root, 'sparkrun-mods.yaml'), `${seedYaml(w, 'dsv41-flash-4x-sglang-aiden16')}mods:\n  - engram-pack\n`)),
    expect: /^mods: sparkrun copies each mod into every container/,
    where: /sparkrun-mods\.yaml:\d+$/,
  },
  {
    rule: 'sparkrun.defaults',
    pass: (w) => w.options(write(join(w.root, 'sparkrun-seed.yaml'), seedYaml(w, 'dsv41-flash-4x-sglang-aiden16'))),
    fail: (w) => w.options(write(join(w.root, 'sparkrun-unused.yaml'), edit(seedYaml(w, 'dsv41-flash-4x-sglang-aiden16'), '  tensor_parallel: 4\n', '  tensor_parallel: 4\n  max_total_tokens: 750000\n'))),
    expect: /^defaults\.max_total_tokens is not named in command, so it reaches nothing/,
    where: /sparkrun-unused\.yaml:12$/,
  },
  {
    rule: 'args.json-value',
    pass: (w) => w.options(w.recipe(w.eugrText), { cluster: w.writeCluster({ nodes: 2 }) }),
    fail: (w) => w.options(w.recipe(edit(w.eugrText, '"B12X_MLA_SPARSE"}\'', '"B12X_MLA_SPARSE"\'')), { cluster: w.writeCluster({ nodes: 2 }) }),
    expect: /^--speculative-config is not valid JSON/,
  },
  {
    rule: 'args.launcher-owned',
    pass: (w) => w.options(w.recipe(w.dsv41Text)),
    fail: (w) => w.options(w.recipe(edit(w.dsv41Text, '"--trust-remote-code",', '"--trust-remote-code",\n    "--port", "30001",'))),
    expect: /args sets --port, which the launcher appends itself/,
  },
  {
    rule: 'engram.rows-grammar',
    pass: (w) => w.options(w.recipe(edit(w.dsv41Text, 'SPARK_ENGRAM_MODE', `SPARK_ENGRAM_ROWS = "${fullRange(w)}"\nSPARK_ENGRAM_MODE`))),
    fail: (w) => w.options(w.recipe(edit(w.dsv41Text, 'SPARK_ENGRAM_MODE', `SPARK_ENGRAM_ROWS = "${fullRange(w).replace(/:(\d+):/g, ':$1-')}"\nSPARK_ENGRAM_MODE`))),
    expect: /^SPARK_ENGRAM_ROWS='1:0-\d+,14:0-\d+' \(set in the recipe's \[env\]\) writes '1:0-\d+', '14:0-\d+' in the old layer:lo-hi form; the overlay reads layer:lo:hi only/,
    where: /recipe\.toml:\d+$/,
  },
  {
    rule: 'engram.ranges-tile',
    pass: (w) => w.options(w.recipe(w.dsv41Text)),
    fail: (w) => w.options(w.recipe(edit(w.dsv41Text, 'SPARK_ENGRAM_MODE', `SPARK_ENGRAM_ROWS = "${fullRange(w)}"\nSPARK_ENGRAM_MODE`))),
    expect: /SPARK_ENGRAM_ROWS='1:0:\d+,14:0:\d+' gives all 4 ranks the same rows.*a full range on every rank double-counts every row/,
  },
  {
    rule: 'vllm.cudagraph-capture',
    pass: (w) => w.options(w.recipe(w.eugrText), { cluster: w.writeCluster({ nodes: 2 }) }),
    fail: (w) => w.options(w.recipe(edit(w.eugrText, '"--max-num-seqs", "6"', '"--max-num-seqs", "8"')), { cluster: w.writeCluster({ nodes: 2 }) }),
    expect: /--max-cudagraph-capture-size 36 is below --max-num-seqs 8 × \(k\+1 = 6\) = 48/,
  },
  {
    rule: 'sglang.cuda-graph-bs',
    pass: (w) => w.options(w.recipe(w.dsv41Text)),
    fail: (w) => w.options(w.recipe(edit(w.dsv41Text, '"--cuda-graph-max-bs-decode", "16"', '"--cuda-graph-max-bs-decode", "8"'))),
    expect: /--cuda-graph-max-bs-decode 8 is below --max-running-requests 16/,
  },
  {
    rule: 'memory.utilization-ceiling',
    pass: (w) => w.options(w.recipe(w.eugrText), { cluster: w.writeCluster({ nodes: 2 }) }),
    fail: (w) => w.options(w.recipe(edit(w.eugrText, '"--gpu-memory-utilization", "0.78"', '"--gpu-memory-utilization", "0.92"')), { cluster: w.writeCluster({ nodes: 2 }) }),
    expect: /--gpu-memory-utilization 0\.92 is above the 0\.85 ceiling/,
  },
  {
    rule: 'alloc.expandable-segments',
    pass: (w) => w.options(w.recipe(w.dsv41Text), { env: MIA_ENV }),
    fail: (w) =>
      w.options(w.recipe(w.dsv41Text), {
        env: write(join(w.root, 'mia.env'), edit(readFileSync(MIA_ENV, 'utf8'), /^PYTORCH_CUDA_ALLOC_CONF=.*$/m, 'PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True')),
      }),
    expect: /PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True \(from the env file\)/,
    where: /mia\.env:\d+$/,
    env: { HOME: '/home/zurih' },
  },
  {
    rule: 'docker.shm-size',
    pass: (w) => w.options(w.recipe(w.dsv41Text)),
    fail: (w) => w.options(w.recipe(edit(w.dsv41Text, 'shm_size = "32gb"\n', ''))),
    expect: /no shm_size/,
  },
  {
    rule: 'parallel.nodes',
    pass: (w) => w.options(w.recipe(w.dsv41Text)),
    fail: (w) => w.options(w.recipe(edit(w.dsv41Text, 'required_nodes = 4', 'required_nodes = 3')), { cluster: w.writeCluster({ nodes: 3 }) }),
    expect: /tensor_parallel_size 4 × pipeline_parallel_size 1 = 4 ranks, but required_nodes = 3/,
  },
  {
    rule: 'cluster.fabric-range',
    pass: (w) => w.options(w.recipe(w.dsv41Text)),
    fail: (w) => w.options(w.recipe(edit(w.dsv41Text, 'NCCL_IB_ADDR_RANGE = "192.168.200.0/24"', 'NCCL_IB_ADDR_RANGE = "192.168.20.0/24"'))),
    expect: /node 0 \(spark1\) has fabric_addr 192\.168\.200\.1, outside NCCL_IB_ADDR_RANGE=192\.168\.20\.0\/24/,
  },
  {
    rule: 'parallel.tp-divides',
    pass: (w) => w.options(w.recipe(w.dsv41Text)),
    fail: (w) =>
      w.options(w.recipe(edit(edit(w.dsv41Text, 'required_nodes = 4', 'required_nodes = 3'), 'tensor_parallel_size = 4', 'tensor_parallel_size = 3')), {
        cluster: w.writeCluster({ nodes: 3 }),
      }),
    expect: /tensor_parallel_size 3 does not divide num_attention_heads 64, hidden_size 5120, vocab_size 129280/,
  },
  {
    rule: 'model.context-length',
    pass: (w) => w.options(w.recipe(w.dsv41Text)),
    fail: (w) => w.options(w.recipe(edit(w.dsv41Text, '"--context-length", "524288"', '"--context-length", "2M"'))),
    expect: /--context-length 2M is above the model's max_position_embeddings 1048576/,
  },
  {
    rule: 'model.snapshot-matches',
    pass: (w) => w.options(w.recipe(w.dsv41Text)),
    fail: (w) => w.options(w.recipe(edit(edit(w.dsv41Text, 'model = "deepseek-ai/DeepSeek-V4.1-Flash"', 'model = "deepseek-ai/DeepSeek-V4-Flash-0731"'), /parent_model = .*\n/, ''))),
    expect: /^model = "deepseek-ai\/DeepSeek-V4-Flash-0731" is a DeepSeek-V4 model, but the snapshot's .*config\.json is DeepSeek-V4\.1$/,
    where: /recipe\.toml:\d+$/,
  },
  {
    rule: 'snapshot.complete',
    pass: (w) => w.options(w.recipe(w.dsv41Text)),
    fail: (w) => w.options(w.recipe(w.dsv41Text), { snapshot: truncatedSnapshot(w) }),
    expect: /model-00001-of-00003\.safetensors/,
    where: /model-00001-of-00003\.safetensors$|snap-truncated$/,
  },
  {
    rule: 'snapshot.engram-tables',
    pass: (w) => w.options(w.recipe(w.dsv41Text)),
    fail: (w) => w.options(w.recipe(w.dsv41Text), { snapshot: noEngramSnapshot(w) }),
    expect: /lists Engram layer 14 \(engram_layer_ids\), but the snapshot has no table for it.*\[E_ENGRAM_NOT_FOUND\]/,
    where: /config\.json$/,
  },
  {
    rule: 'snapshot.engram-dir',
    pass: (w) => w.options(w.recipe(w.dsv41Text)),
    fail: (w) => w.options(w.recipe(edit(w.dsv41Text, `snapshots/${REVISION}`, 'snapshots/0000000000000000000000000000000000000000'))),
    expect: /SPARK_ENGRAM_DIR=\/root\/\.cache\/huggingface\/hub\/.*\/snapshots\/0{40} is .* which does not exist/,
  },
  {
    rule: 'engram.ranges-source',
    pass: (w) => w.options(w.recipe(w.dsv41Text)),
    fail: (w) => w.options(w.recipe(edit(w.dsv41Text, 'entrypoint = ["sh", "/aiden4x-launch.sh"]', 'entrypoint = ["python3", "-m", "sglang.launch_server"]'))),
    expect: /nothing gives this rank its Engram rows/,
  },
  {
    rule: 'pack.free-space',
    pass: (w) => w.options(w.recipe(w.packedText)),
    fail: (w) => {
      const cfg = JSON.parse(readFileSync(join(w.snapshotDir, 'config.json'), 'utf8'));
      cfg.text_config.engram_num_embeddings = [2 ** 50, 2 ** 50];
      const dir = join(w.root, 'huge-config');
      write(join(dir, 'config.json'), JSON.stringify(cfg));
      return w.options(w.recipe(w.packedText), { snapshot: dir });
    },
    expect: /has .* free; one rank's pack of 4 needs \d/,
  },
  {
    rule: 'pack.manifest',
    pass: (w) => {
      write(join(w.root, 'pack-ok', 'engram-local.json'), manifest(w, 0));
      return w.options(w.recipe(w.packedText), { packDir: join(w.root, 'pack-ok') });
    },
    fail: (w) => {
      write(join(w.root, 'pack-r1', 'engram-local.json'), manifest(w, 1));
      return w.options(w.recipe(w.packedText), { packDir: join(w.root, 'pack-r1') });
    },
    expect: /engram-local\.json: rank 1, this is node 0 \(spark1\)/,
  },
  {
    rule: 'mounts.host-path',
    pass: (w) => w.options(w.recipe(w.dsv41Text)),
    fail: (w) => w.options(w.recipe(edit(w.dsv41Text, join(w.root, 'aiden4x-launch.sh'), '/home/kilork/aiden4x-launch.sh'))),
    expect: /extra_mounts host \/home\/kilork\/aiden4x-launch\.sh .* does not exist on node 0 \(spark1\); the container uses \/aiden4x-launch\.sh/,
  },
  {
    rule: 'fabric.hca',
    pass: (w) => w.options(w.recipe(w.dsv41Text)),
    fail: (w) => w.options(w.recipe(edit(w.dsv41Text, 'NCCL_IB_HCA = "rocep1s0f0,roceP2p1s0f0"', 'NCCL_IB_HCA = "rocep1s0f0,roceP9p1s0f0"'))),
    expect: /NCCL_IB_HCA=rocep1s0f0,roceP9p1s0f0: no device roceP9p1s0f0 on node 0/,
  },
  {
    rule: 'fabric.gid',
    pass: (w) => w.options(w.recipe(edit(w.dsv41Text, 'NCCL_NET = "IB"', 'NCCL_NET = "IB"\nNCCL_IB_GID_INDEX = "3"'))),
    fail: (w) => w.options(w.recipe(edit(w.dsv41Text, 'NCCL_NET = "IB"', 'NCCL_NET = "IB"\nNCCL_IB_GID_INDEX = "5"'))),
    expect: /NCCL_IB_GID_INDEX=5: rocep1s0f0 port 1: pinned GID index 5 is not usable \(not configured\)/,
  },
  {
    rule: 'fabric.socket-ifname',
    pass: (w) => w.options(w.recipe(w.dsv41Text)),
    fail: (w) => w.options(w.recipe(edit(w.dsv41Text, 'NCCL_SOCKET_IFNAME = "enp1s0f0np0"', 'NCCL_SOCKET_IFNAME = "enp9s0"'))),
    expect: /NCCL_SOCKET_IFNAME=enp9s0: no interface enp9s0 on node 0/,
  },
  {
    rule: 'node.ports',
    pass: (w) => w.options(w.recipe(w.dsv41Text)),
    async fail(w) {
      const held = await busyPort();
      heldPorts.push(held);
      return w.options(w.recipe(edit(w.dsv41Text, `port = ${w.servingPort}`, `port = ${held.port}`)));
    },
    expect: /port \d+, the serving port, is in use on node 0 \(spark1\)/,
  },
  {
    rule: 'parallel.ep-size',
    pass: (w) => w.options(w.recipe(w.dsv41Text)),
    fail: (w) => w.options(w.recipe(edit(w.dsv41Text, '"--ep-size", "4"', '"--ep-size", "3"'))),
    expect: /^--ep-size 3 does not divide the TP size 4 \(tensor_parallel_size\)$/,
    where: /recipe\.toml:\d+$/,
  },
  {
    rule: 'rendezvous.subnet',
    pass: (w) => w.options(w.recipe(w.dsv41Text)),
    fail: (w) =>
      w.options(w.recipe(w.dsv41Text), { cluster: write(join(w.root, 'ring4.toml'), edit(readFileSync(w.cluster, 'utf8'), 'fabric_addr = "192.168.200.3"', 'fabric_addr = "192.168.201.3"')) }),
    expect: /^node 2 \(spark3\) cannot reach the rendezvous 192\.168\.200\.1:\d+ on the head node 0 \(spark1\) \(its fabric_addr; no dist_addr\): its fabric_addr 192\.168\.201\.3 is outside 192\.168\.200\.1\/24 \(\/24 assumed/,
    where: /ring4\.toml:\d+$/,
  },
  {
    rule: 'mounts.file-is-directory',
    pass: (w) => w.options(w.recipe(w.dsv41Text)),
    fail: (w) => {
      const dir = join(w.root, 'docker-made', 'aiden4x-launch.sh');
      mkdirSync(dir, { recursive: true });
      return w.options(w.recipe(edit(w.dsv41Text, join(w.root, 'aiden4x-launch.sh'), dir)));
    },
    expect: /^extra_mounts host .*docker-made\/aiden4x-launch\.sh is a directory on node 0 \(spark1\), but the container uses \/aiden4x-launch\.sh as a file \(the entrypoint runs it\)$/,
  },
  {
    rule: 'mia.packs',
    pass: async (w) => w.options(await miaRecipe(w, 'mia-good', (dir) => writeMiaPack(dir, w.snapshotDir, { rank: 0, world: 4 }))),
    fail: async (w) =>
      w.options(
        await miaRecipe(w, 'mia-world2', async (dir) => {
          await writeMiaPack(dir, w.snapshotDir, { rank: 0, world: 4 });
          await writeMiaPack(dir, w.snapshotDir, { rank: 0, world: 2, nameWorld: 4, layers: [14] });
        }),
      ),
    expect: /engram-l14-r0of4\.bin on node 0 \(spark1\) is not layer 14's pack for this rank: rows \[0, \d+\), expected \[0, \d+\) \(rank 0 of 2's rows; this is rank 0 of 4\): the Mia stack's reader aborts on it/,
    where: /mia-world2\/engram-l14-r0of4\.bin$/,
  },
  {
    rule: 'mia.o-direct',
    pass: async (w) => w.options(await miaRecipe(w, 'mia-good', (dir) => writeMiaPack(dir, w.snapshotDir, { rank: 0, world: 4 }))),
    async fail(w) {
      // A filesystem that really refuses O_DIRECT, opened by spark itself on this machine.
      const ramfs = mountRamfs();
      heldPorts.push({ close: async () => ramfs.unmount() });
      await writeMiaPack(ramfs.dir, w.snapshotDir, { rank: 0, world: 4 });
      return w.options(w.recipe(edit(repoFile(MIA), 'host = "~/dsv41-engram"', `host = "${ramfs.dir}"`)));
    },
    expect: /^engram-l1-r0of4\.bin and engram-l14-r0of4\.bin in \S+ on node 0 \(spark1\) cannot be opened with O_DIRECT: the Mia stack's reader sees no pack there/,
  },
  {
    rule: 'mia.resident-scales',
    pass: async (w) => w.options(await miaRecipe(w, 'mia-good', (dir) => writeMiaPack(dir, w.snapshotDir, { rank: 0, world: 4 }))),
    fail: async (w) =>
      w.options(w.recipe(edit(readFileSync((await miaRecipe(w, 'mia-good', (dir) => writeMiaPack(dir, w.snapshotDir, { rank: 0, world: 4 }))), 'utf8'), 'DSV41_RESIDENT_SCALES = "0"', 'DSV41_RESIDENT_SCALES = "on"'))),
    expect: /^DSV41_RESIDENT_SCALES=on \(set in the recipe's \[env\]\) is not 0, off or false: with the packs in \S+ attached on node 0 \(spark1\) the stack still pins rank 0's scale rows/,
    where: /recipe\.toml:\d+$/,
  },
  {
    rule: 'mia.identity',
    pass: async (w) => w.options(await miaRecipe(w, 'mia-good', (dir) => writeMiaPack(dir, w.snapshotDir, { rank: 0, world: 4 }))),
    fail: async (w) =>
      w.options(
        await miaRecipe(w, 'mia-identity', async (dir) => {
          await writeMiaPack(dir, w.snapshotDir, { rank: 0, world: 4 });
          writeFileSync(join(dir, 'identity.json'), JSON.stringify({ format: 'DSV41EN1', tp: 2, rows: {} }));
        }),
      ),
    expect: /identity\.json on node 0 \(spark1\) disagrees with the packs beside it: tp 2, the packs here are for tp 4; rows of layer 1 undefined, the pack's header says \d+; rows of layer 14 undefined/,
  },
  // The overlay's row library mounted from the world (enginelib.*, docs/engine-libs.md).
  {
    rule: 'enginelib.file',
    pass: (w) => w.options(libRecipe(w, 'lib-good', LIBRARIES.overlay)),
    fail: (w) => w.options(libRecipe(w, 'lib-text', undefined, 'not a library\n')),
    expect: /^.*lib-text\/libengram_rows\.so on node 0 \(spark1\) \(mounted over \/opt\/dsv41-spark\/overlay\/libengram_rows\.so\) is not an ELF file/,
  },
  {
    rule: 'enginelib.abi',
    pass: (w) => w.options(libRecipe(w, 'lib-good', LIBRARIES.overlay)),
    fail: (w) => w.options(libRecipe(w, 'lib-mia', LIBRARIES.mia)),
    expect: /lib-mia\/libengram_rows\.so on node 0 \(spark1\) .* is librow_store\.so, the other stack's library/,
  },
  {
    rule: 'enginelib.loads',
    pass: (w) => w.options(libRecipe(w, 'lib-good', LIBRARIES.overlay)),
    fail: (w) => w.options(libRecipe(w, 'lib-addon', join(packageRoot(), 'build', 'Release', 'spark.node'))),
    expect: /lib-addon\/libengram_rows\.so on node 0 \(spark1\) .* needs libstdc\+\+\.so\.6/,
  },
];

/** vLLM's dotted form of the speculative config in place of the eugr recipe's JSON. */
const dottedSpec = (text: string) =>
  edit(text, /"--speculative-config", """\n'\{[^']*\}'""",/, '"--speculative-config.method", "dspark",\n    "--speculative-config.num_speculative_tokens", "5",');

/** Mistakes the rules used to miss: each a rule's failing and passing fixture. */
const MISSED: (RuleCase & { name: string })[] = [
  {
    name: "vLLM's dotted --speculative-config.num_speculative_tokens in the capture-size rule",
    rule: 'vllm.cudagraph-capture',
    pass: (w) => w.options(w.recipe(dottedSpec(w.eugrText)), { cluster: w.writeCluster({ nodes: 2 }) }),
    fail: (w) => w.options(w.recipe(edit(dottedSpec(w.eugrText), '"--max-num-seqs", "6"', '"--max-num-seqs", "8"')), { cluster: w.writeCluster({ nodes: 2 }) }),
    expect: /--max-cudagraph-capture-size 36 is below --max-num-seqs 8 × \(k\+1 = 6\) = 48/,
  },
  {
    name: "PyTorch's newer PYTORCH_ALLOC_CONF",
    rule: 'alloc.expandable-segments',
    pass: (w) => w.options(w.recipe(edit(w.dsv41Text, 'CUDA_DEVICE_ORDER', 'PYTORCH_ALLOC_CONF = "expandable_segments:False"\nCUDA_DEVICE_ORDER'))),
    fail: (w) => w.options(w.recipe(edit(w.dsv41Text, 'CUDA_DEVICE_ORDER', 'PYTORCH_ALLOC_CONF = "expandable_segments:True"\nCUDA_DEVICE_ORDER'))),
    expect: /^PYTORCH_ALLOC_CONF=expandable_segments:True \(from the recipe's \[env\]\) gives NaN logits/,
  },
  {
    name: 'SGLang --mem-fraction-static too high for unified memory',
    rule: 'memory.utilization-ceiling',
    pass: (w) => w.options(w.recipe(edit(w.dsv41Text, '"--mem-fraction-static", "0.80"', '"--mem-fraction-static", "0.95"'))),
    fail: (w) => w.options(w.recipe(edit(w.dsv41Text, '"--mem-fraction-static", "0.80"', '"--mem-fraction-static", "0.97"'))),
    expect: /^--mem-fraction-static 0\.97 is above 0\.95, the most measured to work on unified memory/,
  },
  {
    name: '--tp given only in args',
    rule: 'parallel.nodes',
    pass: (w) => w.options(w.recipe(edit(edit(w.dsv41Text, 'tensor_parallel_size = 4\n', ''), '"--trust-remote-code",', '"--trust-remote-code", "--tp", "4",'))),
    fail: (w) => w.options(w.recipe(edit(w.dsv41Text, '"--trust-remote-code",', '"--trust-remote-code", "--tp", "2",'))),
    expect: /^tensor_parallel_size = 4 but args sets --tp 2; the launcher appends --tp-size 4/,
    where: /recipe\.toml:\d+$/,
  },
];

/** Ports (and mounts) a failing fixture holds until its case is done. */
const heldPorts: { close(): Promise<void> }[] = [];

const miaDirs = new Map<string, Promise<void>>();

/** The packed recipe with `FROM` (or `text`) mounted over the overlay's library, from `name` in the world. */
function libRecipe(w: World, name: string, from?: string, text?: string): string {
  const dir = join(w.root, name);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'libengram_rows.so');
  if (from !== undefined) copyFileSync(from, file);
  else writeFileSync(file, text ?? '');
  const mount = `[[extra_mounts]]\nhost = "${file}"\ncontainer = "/opt/dsv41-spark/overlay/libengram_rows.so"\nread_only = true\n\n[env]`;
  return w.recipe(edit(w.packedText, /^\[env\]$/m, mount), name);
}

/** The Mia recipe with its pack mount at `name` in the world, filled once by `fill`. */
async function miaRecipe(w: World, name: string, fill: (dir: string) => Promise<unknown>): Promise<string> {
  const dir = join(w.root, name);
  if (!miaDirs.has(name)) miaDirs.set(name, fill(dir).then(() => undefined));
  await miaDirs.get(name);
  return w.recipe(edit(repoFile(MIA), 'host = "~/dsv41-engram"', `host = "${dir}"`), name);
}

test('every rule on one machine has a passing and a failing fixture below (cluster rules: preflight-cluster.test.ts)', () => {
  assert.deepEqual(CASES.map((c) => c.rule).sort(), RULES.filter((r) => r.scope !== 'cluster').map((r) => r.id).sort());
});

for (const c of [...CASES, ...MISSED]) {
  test(`${'name' in c ? `${c.rule} (${c.name})` : c.rule}: passes on its good fixture, fails on its bad one`, async () => {
    const w = await world();
    const rule = RULES.find((r) => r.id === c.rule)!;
    const good = await preflight({ ...(await c.pass(w)), only: [c.rule] }, c.env);
    assert.deepEqual(good.ran, [c.rule], `ran (skipped: ${JSON.stringify(good.skipped)})`);
    assert.deepEqual(good.findings.filter((f) => f.severity !== 'info'), []);

    let bad: Awaited<ReturnType<typeof preflight>>;
    try {
      bad = await preflight({ ...(await c.fail(w)), only: [c.rule] }, c.env);
    } finally {
      await Promise.all(heldPorts.splice(0).map((h) => h.close()));
    }
    assert.deepEqual(bad.ran, [c.rule], `ran (skipped: ${JSON.stringify(bad.skipped)})`);
    const want = c.severity ?? rule.severity;
    const hit = bad.findings.find((f) => f.severity === want && c.expect.test(f.message));
    assert.ok(hit, `no ${want} matching ${c.expect} in ${JSON.stringify(bad.findings, null, 1)}`);
    assert.equal(hit.rule, c.rule);
    assert.ok(hit.fix.length > 0);
    if (c.where) assert.match(hit.where, c.where);
    if (rule.scope === 'local-node') assert.deepEqual(hit.node, { rank: 0, host: 'spark1' });
  });
}

test('model.context-length: VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 is honoured (a warning, not an error)', async () => {
  const w = await world();
  const long = edit(w.eugrText, '"--max-model-len", "1048576"', '"--max-model-len", "2M"');
  const opts = (text: string) => ({ ...w.options(w.recipe(text), { cluster: w.writeCluster({ nodes: 2 }), snapshot: w.snapshotDir }), only: ['model.context-length'] });
  const refused = await preflight(opts(long));
  assert.deepEqual(refused.findings.map((f) => f.severity), ['error']);
  assert.match(refused.findings[0]!.message, /--max-model-len 2M is above the model's max_position_embeddings 1048576/);
  const allowed = await preflight(opts(edit(long, 'HF_HUB_OFFLINE = "1"', 'HF_HUB_OFFLINE = "1"\nVLLM_ALLOW_LONG_MAX_MODEL_LEN = "1"')));
  assert.deepEqual(allowed.findings.map((f) => f.severity), ['warn']);
  assert.match(allowed.findings[0]!.message, /VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 \(.*recipe\.toml:\d+\) makes the engine accept it/);
  const sglang = edit(w.dsv41Text, '"--context-length", "524288"', '"--context-length", "2M"');
  const sg = await preflight({ ...w.options(w.recipe(edit(sglang, 'CUDA_DEVICE_ORDER', 'SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN = "true"\nCUDA_DEVICE_ORDER'))), only: ['model.context-length'] });
  assert.deepEqual(sg.findings.map((f) => f.severity), ['warn']);
});

test("the model's identity comes from config.json, not its name", async () => {
  const w = await world();
  // A local path as the model: by its name no rule would know it is DeepSeek-V4.1.
  const renamed = edit(edit(w.dsv41Text, 'model = "deepseek-ai/DeepSeek-V4.1-Flash"', 'model = "/models/dsv41-native"'), /parent_model = .*\n/, '');
  const text = edit(renamed, 'SPARK_ENGRAM_MODE', `SPARK_ENGRAM_ROWS = "${fullRange(w)}"\nSPARK_ENGRAM_MODE`);
  // Without a cluster file SPARK_ENGRAM_DIR maps nowhere: no config.json, so only the name is left.
  const byName = await preflight({ recipe: w.recipe(text), nodeRank: 0, sysfs: w.sysfs, only: ['engram.ranges-tile'] });
  assert.deepEqual(byName.family, { name: 'other', from: 'model id' });
  assert.deepEqual(byName.ran, []);
  // Through the cluster's hf_cache (or --snapshot), config.json says deepseek V4.1 with Engram tables.
  const byConfig = await preflight({ ...w.options(w.recipe(text)), only: ['engram.ranges-tile'] });
  assert.deepEqual(byConfig.family, { name: 'dsv41', from: 'config.json' });
  assert.equal(byConfig.stack, 'sglang-dsv41');
  assert.deepEqual(byConfig.findings.map((f) => f.rule), ['engram.ranges-tile']);
});

test("a copy's row counts are checked against the node's snapshot", async () => {
  const w = await world();
  write(join(w.root, 'pack-rows', 'engram-local.json'), manifest(w, 0, 123));
  const r = await preflight({ ...w.options(w.recipe(w.packedText), { packDir: join(w.root, 'pack-rows') }), only: ['pack.manifest'] });
  const rows = tables(w)[0]![1];
  const want = new RegExp(`engram-local\\.json: layer 1's table has 123 rows, the snapshot's has ${rows}: it was made from another checkpoint$`);
  assert.ok(r.findings.some((f) => f.severity === 'error' && want.test(f.message)), JSON.stringify(r.findings, null, 1));
});

// Every rule, one fixture that passes and one that fails (run by test/preflight/preflight-rules.test.ts).

import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { busyPort, edit, MIA, MIA_ENV, repoFile, REVISION, write } from './preflight.js';
import { writeMiaPack } from './mia-pack.js';
import { LIBRARIES } from './engine-lib.js';
import { packageRoot } from '../../src/addon/index.js';
import { mountRamfs } from './tmpfs.js';
import { seedYaml } from './sparkrun.js';
import {
  type RuleCase,
  moveArgsBelowMounts,
  fullRange,
  truncatedSnapshot,
  noEngramSnapshot,
  manifest,
  heldPorts,
  libRecipe,
  miaRecipe,
} from './rule-fixtures.js';

export const CASES: RuleCase[] = [
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
    pass: (w) =>
      w.options(w.recipe(w.dsv41Text), { env: write(join(w.root, 'ok.env'), 'A=1\nB=$A/x\nC=${NOPE:-d}\n') }),
    fail: (w) => w.options(w.recipe(w.dsv41Text), { env: write(join(w.root, 'bad.env'), 'A=1\nB=$NOPE/x\n') }),
    expect: /\$NOPE is not defined/,
    where: /bad\.env:2$/,
  },
  {
    rule: 'env.compose-only',
    pass: (w) =>
      w.options(w.recipe(w.dsv41Text), {
        env: write(join(w.root, 'ok-compose.env'), 'NCCL_DEBUG=WARN\nDSV41_IO_THREADS=96\n'),
      }),
    fail: (w) =>
      w.options(w.recipe(w.dsv41Text), { env: write(join(w.root, 'compose.env'), 'NCCL_DEBUG=WARN\nTP_SIZE=3\n') }),
    expect: /^TP_SIZE is read by the compose file or start script/,
    where: /compose\.env:2$/,
  },
  {
    rule: 'sparkrun.not-run',
    pass: (w) => w.options(write(join(w.root, 'sparkrun-seed.yaml'), seedYaml(w, 'dsv41-flash-4x-sglang-aiden16'))),
    fail: (w) =>
      w.options(
        write(
          join(w.root, 'sparkrun-mods.yaml'),
          `${seedYaml(w, 'dsv41-flash-4x-sglang-aiden16')}mods:\n  - engram-pack\n`,
        ),
      ),
    expect: /^mods: engram-pack: sparkrun copies this mod into every container/,
    where: /sparkrun-mods\.yaml:\d+$/,
  },
  {
    rule: 'sparkrun.defaults',
    pass: (w) => w.options(write(join(w.root, 'sparkrun-seed.yaml'), seedYaml(w, 'dsv41-flash-4x-sglang-aiden16'))),
    fail: (w) =>
      w.options(
        write(
          join(w.root, 'sparkrun-unused.yaml'),
          edit(
            seedYaml(w, 'dsv41-flash-4x-sglang-aiden16'),
            '  tensor_parallel: 4\n',
            '  tensor_parallel: 4\n  max_total_tokens: 750000\n',
          ),
        ),
      ),
    expect: /^defaults\.max_total_tokens is not named in command, so it reaches nothing/,
    where: /sparkrun-unused\.yaml:12$/,
  },
  {
    rule: 'args.json-value',
    pass: (w) => w.options(w.recipe(w.eugrText), { cluster: w.writeCluster({ nodes: 2 }) }),
    fail: (w) =>
      w.options(w.recipe(edit(w.eugrText, '"B12X_MLA_SPARSE"}\'', '"B12X_MLA_SPARSE"\'')), {
        cluster: w.writeCluster({ nodes: 2 }),
      }),
    expect: /^--speculative-config is not valid JSON/,
  },
  {
    rule: 'args.launcher-owned',
    pass: (w) => w.options(w.recipe(w.dsv41Text)),
    fail: (w) =>
      w.options(
        w.recipe(edit(w.dsv41Text, '"--trust-remote-code",', '"--trust-remote-code",\n    "--port", "30001",')),
      ),
    expect: /args sets --port, which the launcher appends itself/,
  },
  {
    rule: 'engram.rows-grammar',
    pass: (w) =>
      w.options(
        w.recipe(edit(w.dsv41Text, 'SPARK_ENGRAM_MODE', `SPARK_ENGRAM_ROWS = "${fullRange(w)}"\nSPARK_ENGRAM_MODE`)),
      ),
    fail: (w) =>
      w.options(
        w.recipe(
          edit(
            w.dsv41Text,
            'SPARK_ENGRAM_MODE',
            `SPARK_ENGRAM_ROWS = "${fullRange(w).replace(/:(\d+):/g, ':$1-')}"\nSPARK_ENGRAM_MODE`,
          ),
        ),
      ),
    expect:
      /^SPARK_ENGRAM_ROWS='1:0-\d+,14:0-\d+' \(set in the recipe's \[env\]\) writes '1:0-\d+', '14:0-\d+' in the old layer:lo-hi form; the overlay reads layer:lo:hi only/,
    where: /recipe\.toml:\d+$/,
  },
  {
    rule: 'engram.ranges-tile',
    pass: (w) => w.options(w.recipe(w.dsv41Text)),
    fail: (w) =>
      w.options(
        w.recipe(edit(w.dsv41Text, 'SPARK_ENGRAM_MODE', `SPARK_ENGRAM_ROWS = "${fullRange(w)}"\nSPARK_ENGRAM_MODE`)),
      ),
    expect:
      /SPARK_ENGRAM_ROWS='1:0:\d+,14:0:\d+' gives all 4 ranks the same rows.*a full range on every rank double-counts every row/,
  },
  {
    rule: 'vllm.cudagraph-capture',
    pass: (w) => w.options(w.recipe(w.eugrText), { cluster: w.writeCluster({ nodes: 2 }) }),
    fail: (w) =>
      w.options(w.recipe(edit(w.eugrText, '"--max-num-seqs", "6"', '"--max-num-seqs", "8"')), {
        cluster: w.writeCluster({ nodes: 2 }),
      }),
    expect: /--max-cudagraph-capture-size 36 is below --max-num-seqs 8 × \(k\+1 = 6\) = 48/,
  },
  {
    rule: 'sglang.cuda-graph-bs',
    pass: (w) => w.options(w.recipe(w.dsv41Text)),
    fail: (w) =>
      w.options(w.recipe(edit(w.dsv41Text, '"--cuda-graph-max-bs-decode", "16"', '"--cuda-graph-max-bs-decode", "8"'))),
    expect: /--cuda-graph-max-bs-decode 8 is below --max-running-requests 16/,
  },
  {
    rule: 'memory.utilization-ceiling',
    pass: (w) => w.options(w.recipe(w.eugrText), { cluster: w.writeCluster({ nodes: 2 }) }),
    fail: (w) =>
      w.options(
        w.recipe(edit(w.eugrText, '"--gpu-memory-utilization", "0.78"', '"--gpu-memory-utilization", "0.92"')),
        { cluster: w.writeCluster({ nodes: 2 }) },
      ),
    expect: /--gpu-memory-utilization 0\.92 is above the 0\.85 ceiling/,
  },
  {
    rule: 'alloc.expandable-segments',
    pass: (w) => w.options(w.recipe(w.dsv41Text), { env: MIA_ENV }),
    fail: (w) =>
      w.options(w.recipe(w.dsv41Text), {
        env: write(
          join(w.root, 'mia.env'),
          edit(
            readFileSync(MIA_ENV, 'utf8'),
            /^PYTORCH_CUDA_ALLOC_CONF=.*$/m,
            'PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True',
          ),
        ),
      }),
    expect: /PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True \(from the env file\)/,
    where: /mia\.env:\d+$/,
    env: { HOME: '/home/zurih' },
  },
  {
    rule: 'docker.shm-size',
    pass: (w) => w.options(w.recipe(w.dsv41Text)),
    fail: (w) => w.options(w.recipe(edit(w.dsv41Text, 'shm_size = "32gb"', 'shm_size = "64m"'))),
    expect:
      /^shm_size "64m" \(64\.0 MiB\) gives the container a private \/dev\/shm no larger than docker's default 64 MB$/,
  },
  {
    rule: 'parallel.nodes',
    pass: (w) => w.options(w.recipe(w.dsv41Text)),
    fail: (w) =>
      w.options(w.recipe(edit(w.dsv41Text, 'required_nodes = 4', 'required_nodes = 3')), {
        cluster: w.writeCluster({ nodes: 3 }),
      }),
    expect: /tensor_parallel_size 4 × pipeline_parallel_size 1 = 4 ranks, but required_nodes = 3/,
  },
  {
    rule: 'cluster.fabric-range',
    pass: (w) => w.options(w.recipe(w.dsv41Text)),
    fail: (w) =>
      w.options(
        w.recipe(
          edit(w.dsv41Text, 'NCCL_IB_ADDR_RANGE = "192.168.200.0/24"', 'NCCL_IB_ADDR_RANGE = "192.168.20.0/24"'),
        ),
      ),
    expect: /node 0 \(spark1\) has fabric_addr 192\.168\.200\.1, outside NCCL_IB_ADDR_RANGE=192\.168\.20\.0\/24/,
  },
  {
    rule: 'cluster.local-only',
    // A spark cluster file gives every fabric address: a local run misses none of the file rules.
    pass: (w) => w.options(w.recipe(w.dsv41Text)),
    fail: (w) =>
      w.options(w.recipe(w.dsv41Text), {
        cluster: write(
          join(w.root, 'sparkrun-lab.yaml'),
          'name: lab\nhosts:\n  - spark1\n  - spark2\n  - spark3\n  - spark4\n',
        ),
      }),
    expect:
      /^--local checks this node only, and sparkrun stores no fabric addresses: not run: cluster\.fabric-range, rendezvous\.subnet \(they need every node's fabric address\); nodes\.reachable, /,
    where: /sparkrun-lab\.yaml$/,
  },
  {
    rule: 'parallel.tp-divides',
    pass: (w) => w.options(w.recipe(w.dsv41Text)),
    fail: (w) =>
      w.options(
        w.recipe(
          edit(
            edit(w.dsv41Text, 'required_nodes = 4', 'required_nodes = 3'),
            'tensor_parallel_size = 4',
            'tensor_parallel_size = 3',
          ),
        ),
        {
          cluster: w.writeCluster({ nodes: 3 }),
        },
      ),
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
    fail: (w) =>
      w.options(
        w.recipe(
          edit(
            edit(
              w.dsv41Text,
              'model = "deepseek-ai/DeepSeek-V4.1-Flash"',
              'model = "deepseek-ai/DeepSeek-V4-Flash-0731"',
            ),
            /parent_model = .*\n/,
            '',
          ),
        ),
      ),
    expect:
      /^model = "deepseek-ai\/DeepSeek-V4-Flash-0731" is a DeepSeek-V4 model, but the snapshot's .*config\.json is DeepSeek-V4\.1$/,
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
    fail: (w) =>
      w.options(
        w.recipe(edit(w.dsv41Text, `snapshots/${REVISION}`, 'snapshots/0000000000000000000000000000000000000000')),
      ),
    expect: /SPARK_ENGRAM_DIR=\/root\/\.cache\/huggingface\/hub\/.*\/snapshots\/0{40} is .* which does not exist/,
  },
  {
    rule: 'engram.ranges-source',
    pass: (w) => w.options(w.recipe(w.dsv41Text)),
    fail: (w) =>
      w.options(
        w.recipe(
          edit(
            w.dsv41Text,
            'entrypoint = ["sh", "/aiden4x-launch.sh"]',
            'entrypoint = ["python3", "-m", "sglang.launch_server"]',
          ),
        ),
      ),
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
    fail: (w) =>
      w.options(w.recipe(edit(w.dsv41Text, join(w.root, 'aiden4x-launch.sh'), '/home/kilork/aiden4x-launch.sh'))),
    expect:
      /^extra_mounts host \/home\/kilork\/aiden4x-launch\.sh \(\/home\/kilork\/aiden4x-launch\.sh\) does not exist on node 0 \(spark1\): docker refuses to start the container \(--mount needs its source to exist\)$/,
  },
  {
    rule: 'fabric.hca',
    pass: (w) => w.options(w.recipe(w.dsv41Text)),
    fail: (w) =>
      w.options(
        w.recipe(
          edit(w.dsv41Text, 'NCCL_IB_HCA = "rocep1s0f0,roceP2p1s0f0"', 'NCCL_IB_HCA = "rocep1s0f0,roceP9p1s0f0"'),
        ),
      ),
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
    fail: (w) =>
      w.options(w.recipe(edit(w.dsv41Text, 'NCCL_SOCKET_IFNAME = "enp1s0f0np0"', 'NCCL_SOCKET_IFNAME = "enp9s0"'))),
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
      w.options(w.recipe(w.dsv41Text), {
        cluster: write(
          join(w.root, 'ring4.toml'),
          edit(readFileSync(w.cluster, 'utf8'), 'fabric_addr = "192.168.200.3"', 'fabric_addr = "192.168.201.3"'),
        ),
      }),
    expect:
      /^node 2 \(spark3\) cannot reach the rendezvous 192\.168\.200\.1:\d+ on the head node 0 \(spark1\) \(its fabric_addr; no dist_addr\): its fabric_addr 192\.168\.201\.3 is outside 192\.168\.200\.1\/24 \(\/24 assumed/,
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
    expect:
      /^extra_mounts host .*docker-made\/aiden4x-launch\.sh is a directory on node 0 \(spark1\), but the container uses \/aiden4x-launch\.sh as a file \(the entrypoint runs it\)$/,
  },
  {
    rule: 'mia.packs',
    pass: async (w) =>
      w.options(await miaRecipe(w, 'mia-good', (dir) => writeMiaPack(dir, w.snapshotDir, { rank: 0, world: 4 }))),
    fail: async (w) =>
      w.options(
        await miaRecipe(w, 'mia-world2', async (dir) => {
          await writeMiaPack(dir, w.snapshotDir, { rank: 0, world: 4 });
          await writeMiaPack(dir, w.snapshotDir, { rank: 0, world: 2, nameWorld: 4, layers: [14] });
        }),
      ),
    expect:
      /engram-l14-r0of4\.bin on node 0 \(spark1\) is not layer 14's pack for this rank: rows \[0, \d+\), expected \[0, \d+\) \(rank 0 of 2's rows; this is rank 0 of 4\): the Mia stack's reader aborts on it/,
    where: /mia-world2\/engram-l14-r0of4\.bin$/,
  },
  {
    rule: 'mia.o-direct',
    pass: async (w) =>
      w.options(await miaRecipe(w, 'mia-good', (dir) => writeMiaPack(dir, w.snapshotDir, { rank: 0, world: 4 }))),
    mounts: 'mounts a ramfs, which refuses O_DIRECT',
    async fail(w) {
      // A filesystem that really refuses O_DIRECT, opened by spark itself on this machine.
      const ramfs = mountRamfs();
      heldPorts.push({ close: async () => ramfs.unmount() });
      await writeMiaPack(ramfs.dir, w.snapshotDir, { rank: 0, world: 4 });
      return w.options(w.recipe(edit(repoFile(MIA), 'host = "~/dsv41-engram"', `host = "${ramfs.dir}"`)));
    },
    expect:
      /^engram-l1-r0of4\.bin and engram-l14-r0of4\.bin in \S+ on node 0 \(spark1\) cannot be opened with O_DIRECT: the Mia stack's reader sees no pack there/,
  },
  {
    rule: 'mia.resident-scales',
    pass: async (w) =>
      w.options(await miaRecipe(w, 'mia-good', (dir) => writeMiaPack(dir, w.snapshotDir, { rank: 0, world: 4 }))),
    fail: async (w) =>
      w.options(
        w.recipe(
          edit(
            readFileSync(
              await miaRecipe(w, 'mia-good', (dir) => writeMiaPack(dir, w.snapshotDir, { rank: 0, world: 4 })),
              'utf8',
            ),
            'DSV41_RESIDENT_SCALES = "0"',
            'DSV41_RESIDENT_SCALES = "on"',
          ),
        ),
      ),
    expect:
      /^DSV41_RESIDENT_SCALES=on \(set in the recipe's \[env\]\) is not 0, off or false: with the packs in \S+ attached on node 0 \(spark1\) the stack still pins rank 0's scale rows/,
    where: /recipe\.toml:\d+$/,
  },
  {
    rule: 'mia.identity',
    pass: async (w) =>
      w.options(await miaRecipe(w, 'mia-good', (dir) => writeMiaPack(dir, w.snapshotDir, { rank: 0, world: 4 }))),
    fail: async (w) =>
      w.options(
        await miaRecipe(w, 'mia-identity', async (dir) => {
          await writeMiaPack(dir, w.snapshotDir, { rank: 0, world: 4 });
          writeFileSync(join(dir, 'identity.json'), JSON.stringify({ format: 'DSV41EN1', tp: 2, rows: {} }));
        }),
      ),
    expect:
      /identity\.json on node 0 \(spark1\) disagrees with the packs beside it: tp 2, the packs here are for tp 4; rows of layer 1 undefined, the pack's header says \d+; rows of layer 14 undefined/,
  },
  // The overlay's row library mounted from the world (enginelib.*, docs/engine-libs.md).
  {
    rule: 'enginelib.file',
    pass: (w) => w.options(libRecipe(w, 'lib-good', LIBRARIES.overlay)),
    fail: (w) => w.options(libRecipe(w, 'lib-text', undefined, 'not a library\n')),
    expect:
      /^.*lib-text\/libengram_rows\.so on node 0 \(spark1\) \(mounted over \/opt\/dsv41-spark\/overlay\/libengram_rows\.so\) is not an ELF file/,
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

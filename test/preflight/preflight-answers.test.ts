// Preflight's answers to broken recipes: each finding's fix must be the right one for the case
// (not the mistake repeated), and every command in it must survive being pasted into a shell.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Finding, PreflightOptions } from '../../src/preflight/index.js';
import { cli } from '../helpers/cli.js';
import { edit, preflight, world, type World } from '../helpers/preflight.js';
import { buildSysfs, typical } from '../helpers/sysfs.js';
import { makeSnapshot } from '../helpers/synth.js';

/** The words sh makes of a pasted command (printf in place of the program). */
function pasted(command: string): string[] {
  const r = spawnSync('/bin/sh', ['-c', `printf '%s\\0' ${command}`], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.split('\0').slice(0, -1);
}

test("a fix line's command keeps a hostile path as one word when pasted (mounts.file-is-directory)", async () => {
  const w = await world();
  const dir = join(w.root, "docker made $(id) it's", 'aiden4x-launch.sh');
  mkdirSync(dir, { recursive: true });
  const r = await preflight({
    ...w.options(w.recipe(edit(w.dsv41Text, join(w.root, 'aiden4x-launch.sh'), dir))),
    only: ['mounts.file-is-directory'],
  });
  const fix = r.findings[0]!.fix;
  const command = /\((sudo rmdir .*)\) and copy the file there$/.exec(fix)?.[1];
  assert.ok(command, fix);
  assert.deepEqual(pasted(command), ['sudo', 'rmdir', dir]);
});

/** The world's two Engram tables as [layer, rows]. */
function tables(w: World): [number, number][] {
  const cfg = JSON.parse(readFileSync(join(w.snapshotDir, 'config.json'), 'utf8')) as {
    text_config: { engram_layer_ids: number[]; engram_num_embeddings: number[] };
  };
  return cfg.text_config.engram_layer_ids.map((l, i) => [l, cfg.text_config.engram_num_embeddings[i]!]);
}

/** The dsv41 recipe on one node (one rank), SPARK_ENGRAM_ROWS set to `rows`. */
function oneNode(w: World, rows: string): PreflightOptions {
  const text = edit(
    edit(
      edit(w.dsv41Text, 'required_nodes = 4', 'required_nodes = 1'),
      'tensor_parallel_size = 4',
      'tensor_parallel_size = 1',
    ),
    'SPARK_ENGRAM_MODE',
    `SPARK_ENGRAM_ROWS = "${rows}"\nSPARK_ENGRAM_MODE`,
  );
  return w.options(w.recipe(edit(text, '"--ep-size", "4"', '"--ep-size", "1"')), {
    cluster: w.writeCluster({ nodes: 1 }),
  });
}

async function only(options: PreflightOptions, rule: string): Promise<Finding[]> {
  const r = await preflight({ ...options, only: [rule] });
  assert.deepEqual(r.ran, [rule], JSON.stringify(r.skipped));
  return r.findings.filter((f) => f.severity !== 'info');
}

test('SPARK_ENGRAM_ROWS one row short on a 1-rank recipe: both fixes give the full range, not the short one or "per rank"', async () => {
  const w = await world();
  const [[l1, n1], [l14, n14]] = tables(w) as [[number, number], [number, number]];
  const full = `${l1}:0:${n1},${l14}:0:${n14}`;
  const want = `write SPARK_ENGRAM_ROWS = "${full}" (one rank owns every row of each table), or drop it`;
  const grammar = await only(oneNode(w, `${l1}:0-${n1 - 1},${l14}:0-${n14}`), 'engram.rows-grammar');
  assert.equal(grammar.length, 1);
  assert.equal(grammar[0]!.fix, want);
  const tile = await only(oneNode(w, `${l1}:0:${n1 - 1},${l14}:0:${n14}`), 'engram.ranges-tile');
  assert.equal(tile.length, 1);
  assert.match(tile[0]!.message, /does not tile \[0, N\)/);
  assert.equal(tile[0]!.fix, want);
  assert.doesNotMatch(tile[0]!.fix, /per rank/);
  assert.deepEqual(await only(oneNode(w, full), 'engram.ranges-tile'), []);
});

test('a full range in the old grammar on every rank of 4: the grammar fix does not keep it, it says per rank', async () => {
  const w = await world();
  const [[l1, n1], [l14, n14]] = tables(w) as [[number, number], [number, number]];
  const text = edit(
    w.dsv41Text,
    'SPARK_ENGRAM_MODE',
    `SPARK_ENGRAM_ROWS = "${l1}:0-${n1},${l14}:0-${n14}"\nSPARK_ENGRAM_MODE`,
  );
  const f = await only(w.options(w.recipe(text)), 'engram.rows-grammar');
  assert.equal(f.length, 1);
  assert.match(f[0]!.fix, /^remove SPARK_ENGRAM_ROWS from the shared environment; set it per rank/);
  assert.ok(!f[0]!.fix.includes(`${l1}:0:${n1}`), f[0]!.fix);
  // A value that does tile (one rank, the full table) still gets the plain rewrite.
  const ok = await only(oneNode(w, `${l1}:0-${n1},${l14}:0-${n14}`), 'engram.rows-grammar');
  assert.equal(ok[0]!.fix, `write SPARK_ENGRAM_ROWS = "${l1}:0:${n1},${l14}:0:${n14}"`);
});

test('fabric.gid: a DOWN port is told to come up; a drifted pinned index is told the index to use, or to drop the pin', async () => {
  const w = await world();
  const down = buildSysfs(
    {
      rocep1s0f0: { 1: { ...typical('192.168.200.1'), state: '1: DOWN' } },
      roceP2p1s0f0: { 1: typical('192.168.200.11') },
    },
    join(w.root, 'sys-down'),
  );
  mkdirSync(join(down, 'class', 'net', 'enp1s0f0np0'), { recursive: true });
  const d = await only({ ...w.options(w.recipe(w.dsv41Text)), sysfs: down }, 'fabric.gid');
  const f = d.find((x) => /port state is '1: DOWN'/.test(x.message));
  assert.ok(f, JSON.stringify(d));
  assert.match(f.fix, /^bring the port up/);
  assert.doesNotMatch(f.fix, /IPv4 address|pin/);
  const pinned = await only(
    w.options(w.recipe(edit(w.dsv41Text, 'NCCL_NET = "IB"', 'NCCL_NET = "IB"\nNCCL_IB_GID_INDEX = "5"'))),
    'fabric.gid',
  );
  assert.ok(pinned.length > 0);
  for (const p of pinned)
    assert.equal(
      p.fix,
      'use NCCL_IB_GID_INDEX=3 (usable on every HCA of this node now), or drop the pin (remove NCCL_IB_GID_INDEX) and let NCCL pick',
    );
});

test('args.json-value names the defect (trailing comma, Python quotes) and the line the JSON is on', async () => {
  const w = await world();
  const cluster = { cluster: w.writeCluster({ nodes: 2 }) };
  const lineOf = (text: string, needle: string) => text.split('\n').findIndex((l) => l.includes(needle)) + 1;
  const comma = edit(w.eugrText, '"B12X_MLA_SPARSE"}\'', '"B12X_MLA_SPARSE",}\'');
  const a = await only(w.options(w.recipe(comma, 'json-comma'), cluster), 'args.json-value');
  assert.equal(a.length, 1);
  assert.match(a[0]!.message, /^--speculative-config is not valid JSON: a trailing comma before '\}' \(line \d+\)$/);
  assert.equal(a[0]!.where.replace(/^.*:/, ''), String(lineOf(comma, '"B12X_MLA_SPARSE",}')));
  assert.equal(a[0]!.fix, "remove the comma before '}' (JSON allows none)");
  const python = edit(w.eugrText, `'{"method":"dspark"`, `'{'method':"dspark"`);
  const b = await only(w.options(w.recipe(python, 'json-python'), cluster), 'args.json-value');
  assert.match(b[0]!.message, /Python-style single quotes/);
  assert.equal(b[0]!.where.replace(/^.*:/, ''), String(lineOf(python, `{'method'`)));
});

test('snapshot.complete reports every missing shard, not only the first', async () => {
  const w = await world();
  const dir = join(w.root, 'snap-two-missing');
  makeSnapshot({ dir });
  rmSync(join(dir, 'model-00001-of-00003.safetensors'));
  rmSync(join(dir, 'model-00003-of-00003.safetensors'));
  const f = await only(w.options(w.recipe(w.dsv41Text), { snapshot: dir }), 'snapshot.complete');
  assert.equal(f.length, 1);
  assert.match(
    f[0]!.message,
    /^2 of 3 shards are missing or dangling links in .*: model-00001-of-00003\.safetensors, model-00003-of-00003\.safetensors; download them again/,
  );
});

test('fabric.socket-ifname lists the interfaces the node has', async () => {
  const w = await world();
  const f = await only(
    w.options(w.recipe(edit(w.dsv41Text, 'NCCL_SOCKET_IFNAME = "enp1s0f0np0"', 'NCCL_SOCKET_IFNAME = "enp9s0"'))),
    'fabric.socket-ifname',
  );
  assert.equal(
    f[0]!.message,
    'NCCL_SOCKET_IFNAME=enp9s0: no interface enp9s0 on node 0 (spark1) (present: enP7s7, enp1s0f0np0)',
  );
  assert.match(f[0]!.fix, /^use one of enP7s7, enp1s0f0np0/);
});

test('a misspelt recipe key gets "did you mean", not the list of every key', async () => {
  const w = await world();
  const f = await only(
    w.options(
      w.recipe(edit(w.dsv41Text, 'tensor_parallel_size = 4', 'tensor_parallel_size = 4\ntensor_paralel_size = 4')),
    ),
    'toml.unknown-key',
  );
  assert.equal(f[0]!.fix, 'did you mean tensor_parallel_size? (else remove it)');
  const far = await only(
    w.options(w.recipe(edit(w.dsv41Text, 'tensor_parallel_size = 4', 'tensor_parallel_size = 4\nwibble = 1'))),
    'toml.unknown-key',
  );
  assert.match(far[0]!.fix, /^remove it, or use a known key: engine, name/);
});

test("--kv-cache-memory-bytes is weighed against the node's unified memory", async () => {
  const w = await world();
  const cluster = { cluster: w.writeCluster({ nodes: 2 }) };
  const kv = (v: string) =>
    w.options(
      w.recipe(edit(w.eugrText, '"--gpu-memory-utilization", "0.78"', `"--kv-cache-memory-bytes", "${v}"`)),
      cluster,
    );
  const big = await only(kv('200G'), 'memory.utilization-ceiling');
  assert.equal(big.length, 1);
  assert.match(
    big[0]!.message,
    /^--kv-cache-memory-bytes 200G \(200 GiB\) is more than 0\.85 of the node's 120 GiB of unified memory \(102 GiB\), before the weights/,
  );
  assert.deepEqual(await only(kv('24G'), 'memory.utilization-ceiling'), []);
  assert.match((await only(kv('lots'), 'memory.utilization-ceiling'))[0]!.message, /must be a byte count/);
});

test("no shm_size shares the host's /dev/shm (no finding); a shm_size is the private /dev/shm's size", async () => {
  const w = await world();
  const none = await only(w.options(w.recipe(edit(w.dsv41Text, 'shm_size = "32gb"\n', ''))), 'docker.shm-size');
  assert.deepEqual(none, []);
  const small = await only(
    w.options(w.recipe(edit(w.dsv41Text, 'shm_size = "32gb"', 'shm_size = "64m"'))),
    'docker.shm-size',
  );
  assert.equal(small[0]!.severity, 'error');
  assert.match(
    small[0]!.message,
    /^shm_size "64m" \(64\.0 MiB\) gives the container a private \/dev\/shm no larger than docker's default 64 MB$/,
  );
  const between = await only(
    w.options(w.recipe(edit(w.dsv41Text, 'shm_size = "32gb"', 'shm_size = "512m"'))),
    'docker.shm-size',
  );
  assert.equal(between[0]!.severity, 'warn');
});

test('a relative wrapper path: preflight reports what launch refuses, in the same words', async () => {
  const w = await world();
  const text = edit(w.dsv41Text, join(w.root, 'aiden4x-launch.sh'), 'aiden4x-launch.sh');
  const f = await only(w.options(w.recipe(text, 'relative-wrapper')), 'mounts.host-path');
  assert.equal(f.length, 1);
  assert.equal(
    f[0]!.message,
    'extra_mounts[0].host "aiden4x-launch.sh" is relative, which a node cannot resolve; write an absolute path or one starting with ~/',
  );
  const launch = await cli(['launch', w.recipe(text, 'relative-wrapper'), '--cluster', w.cluster, '--dry-run']);
  assert.equal(launch.code, 2);
  assert.equal(launch.stderr, `spark: ${f[0]!.where}: ${f[0]!.message}\n`);
});

test('the wrapper check reads the script as sh does: a comment naming SPARK_ENGRAM_ROWS sets nothing', async () => {
  const w = await world();
  const check = async (script: string) => {
    const path = join(w.root, `wrapper-${createHash('sha1').update(script).digest('hex').slice(0, 8)}.sh`);
    writeFileSync(path, script);
    return only(
      w.options(w.recipe(edit(w.dsv41Text, join(w.root, 'aiden4x-launch.sh'), path))),
      'engram.ranges-source',
    );
  };
  const comment = await check(
    '#!/bin/sh\n# TODO: export SPARK_ENGRAM_ROWS per rank\necho "SPARK_ENGRAM_ROWS is set elsewhere"\nexec "$@"\n',
  );
  assert.equal(comment.length, 1);
  assert.match(comment[0]!.message, /never sets SPARK_ENGRAM_ROWS/);
  assert.deepEqual(
    await check(
      '#!/bin/sh\nSPARK_ENGRAM_ROWS=$(spark engram-ranges "$SPARK_ENGRAM_DIR" --rank "$NODE_RANK" --world 4); export SPARK_ENGRAM_ROWS\nexec "$@"\n',
    ),
    [],
  );
  assert.deepEqual(await check('#!/bin/sh\nexec spark wrapper -- "$@"\n'), []);
  assert.deepEqual(
    await check(
      '#!/bin/sh\nexport \\\n  SPARK_ENGRAM_ROWS="$(spark engram-ranges "$SPARK_ENGRAM_DIR" --rank "$NODE_RANK" --world 4)"\nexec "$@"\n',
    ),
    [],
  );
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SparkError } from '../../src/errors/errors.js';
import {
  containerToHost,
  effectiveEnv,
  nodeAddress,
  parseCluster,
  parseEnvFile,
  parseRecipe,
  readCluster,
  readRecipe,
  parseDockerSize,
  engineFamilyOf,
} from '../../src/recipes/index.js';
import { DSV41, EUGR, PACKED, edit, repoFile } from '../helpers/preflight.js';
import { cli } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';

function refused(fn: () => unknown, code: string, pattern: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof SparkError, String(err));
    assert.equal(err.code, code);
    assert.equal(err.exitCode, 2);
    assert.match(err.message, pattern);
    assert.ok(!err.message.includes('\n'), 'one line');
    return true;
  });
}

test('the three seed recipes and env file parse as they are, into typed objects', async () => {
  const { recipe: d, diagnostics: dd } = await readRecipe(DSV41);
  assert.deepEqual(dd, []);
  assert.equal(d.engine, 'sglang');
  assert.equal(d.dockerImage, 'aidendle94/sparkrun-sglang-dsv41-gb10:production-1.6');
  assert.equal(d.model, 'deepseek-ai/DeepSeek-V4.1-Flash');
  assert.equal(d.port, 30000);
  assert.equal(d.requiredNodes, 4);
  assert.equal(d.tensorParallelSize, 4);
  assert.equal(d.pipelineParallelSize, 1);
  assert.equal(d.shmSize, '32gb');
  assert.deepEqual(d.entrypoint, ['sh', '/aiden4x-launch.sh']);
  assert.equal(d.args.length, 38);
  assert.deepEqual(d.extraMounts, [
    { host: '/home/kilork/aiden4x-launch.sh', container: '/aiden4x-launch.sh', readOnly: true, line: 100 },
  ]);
  assert.equal(Object.keys(d.env).length, 40);
  assert.equal(d.env.NCCL_PROTO, '^LL128');
  assert.equal(engineFamilyOf(d), 'sglang-dsv41');

  const { recipe: e, diagnostics: ed } = await readRecipe(EUGR);
  assert.deepEqual(ed, []);
  assert.equal(e.engine, 'vllm');
  assert.equal(e.port, undefined);
  assert.equal(e.requiredNodes, 2);
  assert.equal(e.dockerImageDir, 'deepseek-v4-flash-eugr');
  assert.equal(e.args.length, 44);
  assert.equal(e.extraMounts[0]?.readOnly, false);
  assert.equal(e.env.PYTORCH_CUDA_ALLOC_CONF, 'expandable_segments:True');
  assert.equal(engineFamilyOf(e), 'vllm-dsv4');

  const { recipe: p, diagnostics: pd } = await readRecipe(PACKED);
  assert.deepEqual(pd, []);
  assert.equal(p.env.SPARK_ENGRAM_DIR, '/engram');
  assert.equal(p.env.SPARK_ENGRAM_ROWS, undefined);
});

test('the example cluster files parse', async () => {
  for (const [file, n, name] of [
    ['recipes/clusters/2node-pair.toml', 2, '2nodes-pair'],
    ['recipes/clusters/3node-ring.toml', 3, '3nodes-ring'],
    ['recipes/clusters/4node-switch.toml', 4, '4nodes-switch'],
  ] as const) {
    const { cluster, diagnostics } = await readCluster(file);
    assert.deepEqual(diagnostics, []);
    assert.equal(cluster.name, name);
    assert.equal(cluster.nodes.length, n);
    assert.deepEqual(
      cluster.nodes.map((x) => x.rank),
      [...Array(n).keys()],
    );
    assert.equal(cluster.head, 0);
    assert.ok(cluster.nccl.NCCL_IB_HCA);
  }
  // The ring has no fabric subnet every node shares: each node says where it is reached.
  const ring = (await readCluster('recipes/clusters/3node-ring.toml')).cluster;
  assert.deepEqual(
    ring.nodes.map((n) => [n.fabricAddr, n.fabricPrefix, n.distAddr]),
    [
      ['10.0.22.1', 24, '10.0.0.1'],
      ['10.0.22.2', 24, '10.0.0.2'],
      ['10.0.23.3', 24, '10.0.0.3'],
    ],
  );
  const { cluster } = await readCluster('recipes/clusters/4node-switch.toml');
  assert.equal(cluster.hfCache, '/mnt/nas/ai/huggingface');
  assert.equal(cluster.distPort, 25000);
  assert.equal(cluster.nodes[3]?.fabricAddr, '192.168.200.4');
});

test('wrong types are refused naming the file, line and key', () => {
  const base = repoFile(DSV41);
  refused(
    () => parseRecipe(edit(base, 'required_nodes = 4', 'required_nodes = "4"'), 'r.toml'),
    'E_RECIPE',
    /^r\.toml:\d+: required_nodes must be an integer, got string/,
  );
  refused(
    () => parseRecipe(edit(base, 'port = 30000', 'port = 3.5'), 'r.toml'),
    'E_RECIPE',
    /port must be an integer, got float/,
  );
  refused(
    () => parseRecipe(edit(base, 'port = 30000', 'port = 70000'), 'r.toml'),
    'E_RECIPE',
    /port must be between 1 and 65535, got 70000/,
  );
  refused(
    () => parseRecipe(edit(base, '"--ep-size", "4"', '"--ep-size", 4'), 'r.toml'),
    'E_RECIPE',
    /^r\.toml:\d+: args\[6\] must be a string, got integer; quote it$/,
  );
  refused(
    () => parseRecipe(edit(base, 'SPARK_ENGRAM_THREADS = "64"', 'SPARK_ENGRAM_THREADS = 64'), 'r.toml'),
    'E_RECIPE',
    /env\.SPARK_ENGRAM_THREADS must be a string, got integer/,
  );
  refused(
    () => parseRecipe(edit(base, 'read_only = true', 'read_only = "yes"'), 'r.toml'),
    'E_RECIPE',
    /extra_mounts\[0\]\.read_only must be true or false/,
  );
  refused(
    () => parseRecipe(edit(base, 'engine = "sglang"', 'engine = "trt"'), 'r.toml'),
    'E_RECIPE',
    /engine must be "sglang" or "vllm", got "trt"/,
  );
  refused(
    () => parseRecipe(edit(base, /^model = .*$/m, ''), 'r.toml'),
    'E_RECIPE',
    /model is missing at the top level/,
  );
  refused(
    () => parseRecipe(edit(base, 'container = "/aiden4x-launch.sh"', 'container = "aiden.sh"'), 'r.toml'),
    'E_RECIPE',
    /must be an absolute path/,
  );
  refused(
    () => parseRecipe(edit(base, 'shm_size = "32gb"', 'shm_size = "32gb'), 'r.toml'),
    'E_RECIPE',
    /^r\.toml:\d+:\d+: invalid TOML/,
  );
  const line = (src: string, key: RegExp) => src.split('\n').findIndex((l) => key.test(l)) + 1;
  const bad = edit(base, 'tensor_parallel_size = 4', 'tensor_parallel_size = true');
  refused(
    () => parseRecipe(bad, 'r.toml'),
    'E_RECIPE',
    new RegExp(`^r\\.toml:${line(bad, /^tensor_parallel_size/)}: tensor_parallel_size`),
  );
});

test('unknown keys are warnings with their line', () => {
  const src = edit(repoFile(DSV41), 'shm_size = "32gb"', 'shm_size = "32gb"\ntensor_paralel_size = 4');
  const { diagnostics } = parseRecipe(src, 'r.toml');
  assert.equal(diagnostics.length, 1);
  assert.equal(diagnostics[0]?.kind, 'unknown-key');
  assert.equal(diagnostics[0]?.severity, 'warn');
  assert.equal(diagnostics[0]?.key, 'tensor_paralel_size');
  assert.equal(diagnostics[0]?.line, src.split('\n').indexOf('tensor_paralel_size = 4') + 1);
  const m = parseRecipe(edit(repoFile(DSV41), 'read_only = true', 'read_only = true\nreadonly = true'), 'r.toml');
  assert.deepEqual(
    m.diagnostics.map((d) => d.key),
    ['extra_mounts[0].readonly'],
  );
});

test('keys swallowed by a table header are found, kept out of the table, and named', () => {
  const base = repoFile(DSV41);
  const argsStart = base.indexOf('args = [');
  const argsEnd = base.indexOf(']\n', argsStart) + 2;
  const argsBlock = base.slice(argsStart, argsEnd);
  const moved = (base.slice(0, argsStart) + base.slice(argsEnd)).replace(
    'read_only = true\n',
    `read_only = true\n${argsBlock}`,
  );
  const { recipe, diagnostics } = parseRecipe(moved, 'r.toml');
  assert.deepEqual(recipe.args, []);
  assert.deepEqual(Object.keys(recipe.extraMounts[0]!).sort(), ['container', 'host', 'line', 'readOnly']);
  assert.equal(diagnostics.length, 1);
  const d = diagnostics[0]!;
  assert.equal(d.kind, 'swallowed-key');
  assert.equal(d.severity, 'error');
  assert.equal(d.key, 'extra_mounts[0].args');
  assert.equal(d.line, moved.split('\n').indexOf('args = [') + 1);
  const header = moved.split('\n').indexOf('[[extra_mounts]]') + 1;
  assert.match(
    d.message,
    new RegExp(`^args on line ${d.line} is inside the \\[\\[extra_mounts\\]\\] table \\(header on line ${header}\\)`),
  );

  // In [env]: an array would be a type error, but it is reported as swallowed instead.
  const intoEnv = base.slice(0, argsStart) + base.slice(argsEnd) + '\n' + argsBlock;
  const r2 = parseRecipe(intoEnv, 'r.toml');
  assert.deepEqual(
    r2.diagnostics.map((x) => x.key),
    ['env.args'],
  );
  assert.equal(r2.recipe.env.args, undefined);

  // A required key swallowed is refused, saying where it went.
  const engineMoved = edit(base, 'engine = "sglang"\n', '') + '\nengine = "sglang"\n';
  refused(() => parseRecipe(engineMoved, 'r.toml'), 'E_RECIPE', /engine on line \d+ is inside the \[env\] table/);
});

test('cluster files: required keys, addresses, head and duplicates', () => {
  const ok =
    'name = "c"\nhf_cache = "/hf"\n[[nodes]]\nhost = "a"\nfabric_addr = "10.0.0.1"\n[[nodes]]\nhost = "b"\nfabric_addr = "10.0.0.2"\n[nccl]\nNCCL_NET = "IB"\n';
  const { cluster } = parseCluster(ok, 'c.toml');
  assert.deepEqual(
    cluster.nodes.map((n) => [n.rank, n.host, n.fabricAddr, n.line]),
    [
      [0, 'a', '10.0.0.1', 3],
      [1, 'b', '10.0.0.2', 6],
    ],
  );
  assert.equal(cluster.distPort, 25000);
  assert.deepEqual(cluster.nccl, { NCCL_NET: 'IB' });
  refused(
    () => parseCluster(ok.replace('"10.0.0.2"', '"spark2"'), 'c.toml'),
    'E_CLUSTER',
    /^c\.toml:8: nodes\[1\]\.fabric_addr must be an IP address like "192\.168\.200\.1" or "192\.168\.200\.1\/24", got "spark2"/,
  );
  refused(() => parseCluster(ok.replace('"b"', '"a"'), 'c.toml'), 'E_CLUSTER', /nodes 0 and 1 have the same host a/);
  refused(
    () => parseCluster('head = 2\n' + ok, 'c.toml'),
    'E_CLUSTER',
    /^c\.toml:1: head must be between 0 and 1, got 2/,
  );
  refused(() => parseCluster('name = "c"\n', 'c.toml'), 'E_CLUSTER', /nodes is missing/);
  refused(
    () => parseCluster(ok.replace('NCCL_NET = "IB"', 'NCCL_NET = 1'), 'c.toml'),
    'E_CLUSTER',
    /^c\.toml:10: nccl\.NCCL_NET must be a string/,
  );
});

test('cluster files: a host that is empty, an ssh option, not one word or shell syntax is refused (exit 2)', async () => {
  const ok =
    'name = "c"\n[[nodes]]\nhost = "a"\nfabric_addr = "10.0.0.1"\n[[nodes]]\nhost = "b"\nfabric_addr = "10.0.0.2"\n';
  const cases: [string, RegExp][] = [
    ['', /^c\.toml:6: nodes\[1\]\.host "" is empty: it must name the node to ssh to; write the ssh target/],
    [
      '-oProxyCommand=touch /tmp/x',
      /^c\.toml:6: nodes\[1\]\.host "-oProxyCommand=touch \/tmp\/x" starts with '-', which ssh would read as an option/,
    ],
    ['user@-oProxyCommand=x', /has no host name after 'user@'/],
    ['user@', /has no host name after 'user@'/],
    ['spark 2', /contains whitespace or a control character/],
    ['spark2\n', /contains whitespace or a control character/],
    // A ProxyCommand in ~/.ssh/config hands %h and %r to a shell.
    ['spark2$(reboot)', /contains "\$", which is not part of a host name or address/],
    ['a;b@spark2', /has a user that contains ";", which is not part of a user name/],
    ['@spark2', /has no user name before '@'/],
  ];
  for (const [host, re] of cases) {
    refused(() => parseCluster(ok.replace('"b"', JSON.stringify(host)), 'c.toml'), 'E_CLUSTER', re);
  }
  assert.equal(parseCluster(ok.replace('"b"', '"root@10.0.0.2"'), 'c.toml').cluster.nodes[1]!.host, 'root@10.0.0.2');
  // End to end: exit 2 before anything runs.
  const file = join(tempDir(), 'c.toml');
  writeFileSync(file, ok.replace('"b"', '"-oProxyCommand=x"'));
  const r = await cli(['launch', '--stop', '--cluster', file]);
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, /starts with '-'/);
});

test('a cluster key appended below [nccl] is swallowed, not an NCCL variable', () => {
  const src =
    'name = "c"\n[[nodes]]\nhost = "a"\nfabric_addr = "10.0.0.1"\n[nccl]\nNCCL_NET = "IB"\ndist_port = 20000\nhf_cache = "/hf"\n';
  const { cluster, diagnostics } = parseCluster(src, 'c.toml');
  assert.deepEqual(cluster.nccl, { NCCL_NET: 'IB' });
  assert.equal(cluster.distPort, 25000);
  assert.equal(cluster.hfCache, undefined);
  assert.deepEqual(
    diagnostics.map((d) => [d.kind, d.key, d.line]),
    [
      ['swallowed-key', 'nccl.dist_port', 7],
      ['swallowed-key', 'nccl.hf_cache', 8],
    ],
  );
  assert.match(diagnostics[0]!.message, /^dist_port on line 7 is inside the \[nccl\] table \(header on line 5\)/);
  refused(
    () => parseCluster('[[nodes]]\nhost = "a"\nfabric_addr = "10.0.0.1"\nname = "c"\n', 'c.toml'),
    'E_CLUSTER',
    /name on line 4 is inside the \[\[nodes\]\] table/,
  );
});

test('container paths map back to host paths through the longest mount', async () => {
  const { recipe } = parseRecipe(
    repoFile(DSV41).replace(
      'read_only = true',
      'read_only = true\n[[extra_mounts]]\nhost = "~/models"\ncontainer = "/root/.cache/huggingface/hub/x"',
    ),
    'r.toml',
  );
  const { cluster } = parseCluster(
    'name = "c"\nhf_cache = "/nas/hf"\n[[nodes]]\nhost = "a"\nfabric_addr = "10.0.0.1"\n',
    'c.toml',
  );
  const dir = recipe.env.SPARK_ENGRAM_DIR!;
  assert.equal(
    containerToHost(dir, recipe, cluster, '/home/u')?.host,
    dir.replace('/root/.cache/huggingface', '/nas/hf'),
  );
  assert.equal(
    containerToHost('/root/.cache/huggingface/hub/x/y', recipe, cluster, '/home/u')?.host,
    '/home/u/models/y',
  );
  assert.equal(containerToHost('/aiden4x-launch.sh', recipe, cluster)?.host, '/home/kilork/aiden4x-launch.sh');
  assert.equal(containerToHost('/root/.cache/huggingfaceX', recipe, cluster), undefined);
  assert.equal(containerToHost(dir, recipe, undefined), undefined);
});

test('docker sizes', () => {
  assert.equal(parseDockerSize('32gb'), 32 * 2 ** 30);
  assert.equal(parseDockerSize('16g'), 16 * 2 ** 30);
  assert.equal(parseDockerSize('512M'), 512 * 2 ** 20);
  assert.equal(parseDockerSize('1GiB'), 2 ** 30);
  assert.equal(parseDockerSize('1048576'), 1048576);
  assert.equal(parseDockerSize('32 gigs'), undefined);
  assert.equal(parseDockerSize(''), undefined);
});

test('cluster files: dist_addr, fabric prefixes and per-node environment', () => {
  const src = [
    'name = "ring"',
    '[[nodes]]',
    'host = "a"',
    'fabric_addr = "10.0.22.1/24"',
    'dist_addr = "10.0.0.1"',
    '[[nodes]]',
    'host = "b"',
    'fabric_addr = "10.0.22.2"',
    '[nodes.env]',
    'NCCL_SOCKET_IFNAME = "enP2p1s0"',
    'dist_addr = "10.0.0.2"',
    '[nccl]',
    'NCCL_SOCKET_IFNAME = "enP7s7"',
    '',
  ].join('\n');
  const { cluster, diagnostics } = parseCluster(src, 'c.toml');
  assert.deepEqual(
    cluster.nodes.map((n) => [n.fabricAddr, n.fabricPrefix, n.distAddr, nodeAddress(n), n.env]),
    [
      ['10.0.22.1', 24, '10.0.0.1', '10.0.0.1', {}],
      ['10.0.22.2', undefined, undefined, '10.0.22.2', { NCCL_SOCKET_IFNAME: 'enP2p1s0' }],
    ],
  );
  // dist_addr written below [nodes.env] is a variable of that table, not the node's address: said.
  assert.deepEqual(
    diagnostics.map((d) => [d.kind, d.key, d.line]),
    [['swallowed-key', 'nodes[1].env.dist_addr', 11]],
  );
  assert.match(
    diagnostics[0]!.message,
    /^dist_addr on line 11 is inside the \[nodes\.env\] table \(header on line 9\), so it is the environment variable nodes\[1\]\.env\.dist_addr/,
  );
  refused(
    () => parseCluster(src.replace('"10.0.22.1/24"', '"10.0.22.1/33"'), 'c.toml'),
    'E_CLUSTER',
    /^c\.toml:4: nodes\[0\]\.fabric_addr: the prefix length in "10\.0\.22\.1\/33" must be 0-32/,
  );
  refused(
    () => parseCluster(src.replace('dist_addr = "10.0.0.1"', 'dist_addr = "10.0.0.1/24"'), 'c.toml'),
    'E_CLUSTER',
    /^c\.toml:5: nodes\[0\]\.dist_addr must be an IP address like "10\.0\.0\.1", got "10\.0\.0\.1\/24"/,
  );
  refused(
    () =>
      parseCluster(
        src.replace('fabric_addr = "10.0.22.2"', 'fabric_addr = "10.0.22.2"\ndist_addr = "10.0.0.1"'),
        'c.toml',
      ),
    'E_CLUSTER',
    /nodes 0 and 1 have the same dist_addr 10\.0\.0\.1/,
  );
});

test("a node's [nodes.env] wins over the cluster, the recipe and the env file, on that node only", () => {
  const { cluster } = parseCluster(
    'name = "c"\n[[nodes]]\nhost = "a"\nfabric_addr = "10.0.0.1"\n[[nodes]]\nhost = "b"\nfabric_addr = "10.0.0.2"\n[nodes.env]\nX = "node"\n[nccl]\nX = "cluster"\n',
    'c.toml',
  );
  const { recipe } = parseRecipe('engine = "sglang"\ndocker_image = "i"\nmodel = "m"\n[env]\nX = "recipe"\n', 'r.toml');
  const envFile = parseEnvFile('X=file\n', 'x.env', {});
  assert.equal(effectiveEnv(recipe, cluster, envFile).get('X')!.value, 'file');
  assert.equal(effectiveEnv(recipe, cluster, envFile, 0).get('X')!.value, 'file');
  const b = effectiveEnv(recipe, cluster, envFile, 1).get('X')!;
  assert.deepEqual([b.value, b.source, b.file, b.line], ['node', 'node', 'c.toml', 9]);
  assert.deepEqual(
    b.overrides.map((o) => o.source),
    ['cluster', 'recipe', 'env-file'],
  );
});

test('environment keys: one rule for the recipe [env], the cluster [nccl] and [nodes.env] (exit 2, naming the key)', async () => {
  const recipe = (env: string) => `engine = "sglang"\ndocker_image = "i"\nmodel = "m"\n[env]\nA = "1"\n${env}\n`;
  const cluster = (nccl: string, nodeEnv: string) =>
    `name = "c"\n[[nodes]]\nhost = "a"\nfabric_addr = "10.0.0.1"\n[nodes.env]\nX = "1"\n${nodeEnv}\n[nccl]\nNCCL_NET = "IB"\n${nccl}\n`;
  const bad: [string, RegExp][] = [
    ['"PATH=/evil:/usr/bin" = "x"', /"PATH=\/evil:\/usr\/bin" is not an environment variable name/],
    ['"" = "x"', /"" is not an environment variable name/],
    ['"A B" = "x"', /"A B" is not an environment variable name/],
    ['"1A" = "x"', /"1A" is not an environment variable name/],
    ['"A\\nB" = "x"', /"A\\nB" is not an environment variable name/],
  ];
  for (const [line, re] of bad) {
    refused(
      () => parseRecipe(recipe(line), 'r.toml'),
      'E_RECIPE',
      new RegExp(`^r\\.toml:6: \\[env\\] key ${re.source}`),
    );
    refused(
      () => parseCluster(cluster(line, ''), 'c.toml'),
      'E_CLUSTER',
      new RegExp(`^c\\.toml:10: \\[nccl\\] key ${re.source}`),
    );
    refused(
      () => parseCluster(cluster('', line), 'c.toml'),
      'E_CLUSTER',
      new RegExp(`^c\\.toml:7: \\[nodes\\[0\\]\\.env\\] key ${re.source}`),
    );
    // The .env reader refuses the same keys (in a .env line, `PATH=/evil...=x` is PATH).
    if (line.startsWith('"PATH=')) continue;
    const dotenv = `${line.replace(/^"(.*)" = "x"$/, '$1').replace('\\n', '\n')}=x\n`;
    assert.throws(() => parseEnvFile(dotenv, 'e.env', {}), /e\.env:1: expected/);
  }
  refused(() => parseRecipe(recipe('B = "a\\u0000b"'), 'r.toml'), 'E_RECIPE', /^r\.toml:6: env\.B contains a NUL byte/);
  assert.deepEqual(parseRecipe(recipe('NCCL_IB.X = "1"'.replace('NCCL_IB.X', '"NCCL_IB.X"')), 'r.toml').recipe.env, {
    A: '1',
    'NCCL_IB.X': '1',
  });
});

test('a table, array or date where [env] wants a string is one line naming the key (exit 2), never a TypeError', () => {
  const recipe = (env: string) => `engine = "sglang"\ndocker_image = "i"\nmodel = "m"\n[env]\n${env}\n`;
  for (const [value, type] of [
    ['{ a = 1 }', 'table'],
    ['1979-05-27T07:32:00Z', 'date'],
    ['1979-05-27', 'date'],
    ['[1]', 'array'],
    ['1', 'integer'],
  ] as const) {
    refused(
      () => parseRecipe(recipe(`X = ${value}`), 'r.toml'),
      'E_RECIPE',
      new RegExp(`^r\\.toml:5: env\\.X must be a string, got ${type}; write it as X = "…"$`),
    );
  }
  refused(
    () => parseRecipe(recipe('[env.X]\na = 1'), 'r.toml'),
    'E_RECIPE',
    /env\.X must be a string, got table; write it as X = "…"$/,
  );
  refused(
    () =>
      parseCluster(
        'name = "c"\n[[nodes]]\nhost = "a"\nfabric_addr = "10.0.0.1"\n[nccl]\nNCCL_NET = { a = 1 }\n',
        'c.toml',
      ),
    'E_CLUSTER',
    /^c\.toml:6: nccl\.NCCL_NET must be a string, got table/,
  );
});

test('a mount key written below [env] is told to move into its [[extra_mounts]] table, not to become a string', () => {
  const src =
    'engine = "sglang"\ndocker_image = "i"\nmodel = "m"\n[[extra_mounts]]\nhost = "/h"\ncontainer = "/c"\n[env]\nA = "1"\nread_only = true\n';
  refused(
    () => parseRecipe(src, 'r.toml'),
    'E_RECIPE',
    /^r\.toml:9: env\.read_only must be a string, got boolean; read_only is a \[\[extra_mounts\]\] key: move it into its \[\[extra_mounts\]\] table, above the \[env\] header/,
  );
});

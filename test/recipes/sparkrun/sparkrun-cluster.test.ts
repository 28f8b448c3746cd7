// sparkrun clusters: found by name under a temporary HOME (and the default from
// clusters/.default), each node's fabric address asked of the node over the fake ssh, and a
// node without one refused with the way to give it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { clusterSpec, openCluster } from '../../../src/recipes/index.js';
import { SparkError } from '../../../src/errors/errors.js';
import { preflightRules } from '../../../src/preflight/rules/index.js';
import { cli } from '../../helpers/cli.js';
import { fakeNodes, type FakeNodes } from '../../helpers/fake-node.js';
import { REVISION, world, write } from '../../helpers/preflight.js';
import { tempDir } from '../../helpers/tmp.js';

const RULES = await preflightRules();

/** The fake ssh maps this prefix of a command to each host's own directory: its own sysfs. */
const FAKE_ROOT = '/sys';

interface Host {
  /** ssh target as the cluster gives it. */
  target: string;
  /** Interfaces: name, IPv4/prefix (if any), and whether an RDMA device backs it. */
  ifaces: { name: string; addr?: string; rdma: boolean }[];
  defaultIface?: string;
}

/** Each host's own `ip`, sysfs and routing table, as the fake ssh serves them. */
function fakeHosts(fake: FakeNodes, hosts: Host[]): NodeJS.ProcessEnv {
  const env = fake.env({}, { FAKE_ROOT });
  for (const h of hosts) {
    const hd = join(env.FAKE_DIR!, 'hosts', h.target);
    const lines = h.ifaces
      .filter((i) => i.addr)
      .map((i, n) => `echo '${n + 2}: ${i.name}    inet ${i.addr} brd 0.0.0.0 scope global ${i.name}'`);
    chmodSync(
      write(join(hd, 'bin', 'ip'), `#!/bin/sh\n[ "$1 $2 $3" = "-o addr show" ] || exit 1\n${lines.join('\n')}\n`),
      0o755,
    );
    for (const i of h.ifaces) {
      mkdirSync(
        join(hd, 'root', 'class', 'net', i.name, ...(i.rdma ? ['device', 'infiniband', `roce-${i.name}`] : [])),
        { recursive: true },
      );
    }
    const route = ['Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT'];
    if (h.defaultIface) route.push(`${h.defaultIface}\t00000000\t0100000A\t0003\t0\t0\t0\t00000000\t0\t0\t0`);
    write(join(hd, 'proc', 'net', 'route'), route.join('\n') + '\n');
  }
  return env;
}

const sparkHost = (n: number, withFabric = true): Host => ({
  target: `kilork@spark${n}`,
  ifaces: [
    { name: 'enP7s7', addr: `10.0.0.${n}/24`, rdma: false },
    { name: 'enp1s0f0np0', ...(withFabric ? { addr: `192.168.200.${n}/24` } : {}), rdma: true },
    { name: 'enp1s0f1np1', rdma: true },
  ],
  defaultIface: 'enP7s7',
});

/** A HOME with sparkrun's settings and clusters. */
function sparkrunHome(
  clusters: Record<string, string>,
  opts: { default?: string; hfCache?: string; /** null: no ssh.user */ sshUser?: string | null } = {},
): string {
  const home = tempDir('spark-sparkrun-home-');
  const dir = join(home, '.config', 'sparkrun', 'clusters');
  for (const [name, text] of Object.entries(clusters)) write(join(dir, `${name}.yaml`), text);
  if (opts.default) write(join(dir, '.default'), `${opts.default}\n`);
  write(
    join(home, '.config', 'sparkrun', 'config.yaml'),
    `${opts.sshUser === null ? '' : `ssh:\n  user: ${opts.sshUser ?? 'kilork'}\n`}hf_cache_dir: ${opts.hfCache ?? '~/.cache/huggingface'}\n`,
  );
  return home;
}

const LAB =
  'name: lab\ndescription: two Sparks on a CX7 cable\nhosts:\n  - spark1\n  - spark2\ntransfer_interface: cx7\ntopology: direct\n';

test('--cluster NAME finds ~/.config/sparkrun/clusters/NAME.yaml; each node says its own fabric address over ssh', async () => {
  const fake = fakeNodes();
  const home = sparkrunHome({ lab: LAB }, { default: 'lab', hfCache: '/mnt/nas/hf' });
  const env = { ...fakeHosts(fake, [sparkHost(1), sparkHost(2)]), HOME: home };
  const { cluster, diagnostics } = await openCluster('lab', { env, cwd: process.cwd() });
  assert.deepEqual(diagnostics, []);
  assert.equal(cluster.name, 'lab');
  assert.equal(cluster.file, join(home, '.config', 'sparkrun', 'clusters', 'lab.yaml'));
  assert.equal(cluster.hfCache, '/mnt/nas/hf');
  assert.deepEqual(
    cluster.nodes.map((n) => [n.rank, n.host, n.fabricAddr, n.fabricPrefix, n.line]),
    [
      [0, 'kilork@spark1', '192.168.200.1', 24, 4],
      [1, 'kilork@spark2', '192.168.200.2', 24, 5],
    ],
  );
  // Asked over ssh, once per node, as the cluster's user.
  assert.deepEqual(
    fake
      .calls()
      .filter((c) => c.prog === 'ssh')
      .map((c) => c.host)
      .sort(),
    ['kilork@spark1', 'kilork@spark2'],
  );
  // No --cluster: the default cluster's file.
  assert.equal(await clusterSpec(undefined, env), cluster.file);
  assert.equal(await clusterSpec(undefined, { HOME: tempDir('spark-empty-home-') }), undefined);
});

test("transfer_interface mgmt: the address of the default route's interface", async () => {
  const fake = fakeNodes();
  const home = sparkrunHome({ mgmt: LAB.replace('cx7', 'mgmt') });
  const env = { ...fakeHosts(fake, [sparkHost(1), sparkHost(2)]), HOME: home };
  const { cluster } = await openCluster('mgmt', { env, cwd: process.cwd() });
  assert.deepEqual(
    cluster.nodes.map((n) => n.fabricAddr),
    ['10.0.0.1', '10.0.0.2'],
  );
});

test('a node without an address on its ConnectX-7 is one error naming it, and how to give the address', async () => {
  const fake = fakeNodes();
  const home = sparkrunHome({ lab: LAB });
  const env = { ...fakeHosts(fake, [sparkHost(1), sparkHost(2, false)]), HOME: home };
  await assert.rejects(openCluster('lab', { env, cwd: process.cwd() }), (err: unknown) => {
    assert.ok(err instanceof SparkError && err.code === 'E_CLUSTER' && err.exitCode === 2);
    assert.equal(
      err.message,
      `${join(home, '.config', 'sparkrun', 'clusters', 'lab.yaml')}:5: sparkrun stores no fabric addresses and spark could not find kilork@spark2's on the node ` +
        '(transfer_interface cx7): none of its ConnectX-7 interfaces (enp1s0f0np0, enp1s0f1np1) has an IPv4 address; ' +
        'give the addresses in a spark cluster file (one [[nodes]] table per host with host and fabric_addr, docs/recipes.md) and pass its path to --cluster',
    );
    return true;
  });
  // A node ssh cannot reach is said the same way.
  const downFake = fakeNodes();
  const down = { ...fakeHosts(downFake, [sparkHost(1), sparkHost(2)]), HOME: home };
  downFake.env({
    'kilork@spark2 ssh': { exit: 255, stderr: 'ssh: connect to host spark2 port 22: No route to host\n' },
  });
  await assert.rejects(
    openCluster('lab', { env: down, cwd: process.cwd() }),
    /could not find kilork@spark2's on the node \(transfer_interface cx7\): it did not answer over ssh \(ssh: connect to host spark2 port 22: No route to host\)/,
  );
  await assert.rejects(
    openCluster('nosuch', { env, cwd: process.cwd() }),
    /--cluster nosuch: no such file, and there is no sparkrun cluster .*nosuch\.yaml/,
  );
});

test('spark launch --dry-run with a sparkrun cluster name and a sparkrun recipe: the plan on the nodes it found', async () => {
  const w = await world();
  const fake = fakeNodes();
  const home = sparkrunHome({ lab: LAB }, { default: 'lab', hfCache: w.hfCache });
  const env = { ...fakeHosts(fake, [sparkHost(1), sparkHost(2)]), HOME: home };
  const recipe = write(
    join(w.root, 'sparkrun-cluster', 'recipe.yaml'),
    'runtime: vllm\nmodel: deepseek-ai/DeepSeek-V4.1-Flash\ncontainer: vllm/vllm-openai:v0.12.0\ndefaults:\n  tensor_parallel: 2\n',
  );
  const r = await cli(['launch', recipe, '--dry-run', '--json'], env);
  assert.equal(r.code, 0, r.stderr);
  const plan = JSON.parse(r.stdout) as {
    cluster: string;
    rendezvous: string;
    nodes: { host: string; fabricAddr: string; argv: string[] }[];
  };
  assert.equal(plan.cluster, join(home, '.config', 'sparkrun', 'clusters', 'lab.yaml'));
  assert.equal(plan.rendezvous, '192.168.200.1:25000');
  assert.deepEqual(
    plan.nodes.map((n) => [n.host, n.fabricAddr]),
    [
      ['kilork@spark1', '192.168.200.1'],
      ['kilork@spark2', '192.168.200.2'],
    ],
  );
  assert.ok(
    plan.nodes[0]!.argv.includes(
      `/root/.cache/huggingface/hub/models--deepseek-ai--DeepSeek-V4.1-Flash/snapshots/${REVISION}`,
    ),
  );
});

/** A sparkrun recipe every command below can read (the cluster is refused before it matters). */
async function anyRecipe(): Promise<string> {
  const w = await world();
  return write(
    join(w.root, 'sparkrun-hostile', 'recipe.yaml'),
    'runtime: vllm\nmodel: deepseek-ai/DeepSeek-V4.1-Flash\ncontainer: vllm/vllm-openai:v0.12.0\ndefaults:\n  tensor_parallel: 2\n',
  );
}

test("a sparkrun cluster's host or user that ssh would read as an option is refused, naming the file and key, before ssh runs", async () => {
  const recipe = await anyRecipe();
  // Whatever ssh would make of the value, its ProxyCommand would create a file in this directory.
  const proxyDir = tempDir('spark-proxy-');
  const touched = join(proxyDir, 'touched');
  const hostile = JSON.stringify(`-oProxyCommand=touch ${touched}`);
  const clusterFile = (home: string) => join(home, '.config', 'sparkrun', 'clusters', 'lab.yaml');
  const config = (home: string) => join(home, '.config', 'sparkrun', 'config.yaml');
  const cases: { name: string; home: () => string; expect: (home: string) => string }[] = [
    {
      name: 'a host',
      home: () => sparkrunHome({ lab: `name: lab\nhosts:\n  - ${hostile}\n  - spark2\n` }, { sshUser: null }),
      expect: (home) =>
        `${clusterFile(home)}:3: hosts[0] ${hostile} starts with '-', which ssh would read as an option; ` +
        'write the ssh target of the node, e.g. spark1 or user@10.0.0.1',
    },
    {
      name: "the cluster's user",
      home: () => sparkrunHome({ lab: `name: lab\nuser: ${hostile}\nhosts:\n  - spark1\n  - spark2\n` }),
      expect: (home) =>
        `${clusterFile(home)}:2: user ${hostile} starts with '-', which ssh would read as an option; ` +
        'write the user ssh logs in as, e.g. user: kilork',
    },
    {
      name: "config.yaml's ssh.user",
      home: () => sparkrunHome({ lab: LAB }, { sshUser: hostile }),
      expect: (home) =>
        `${config(home)}:2: ssh.user ${hostile} starts with '-', which ssh would read as an option; ` +
        'write the user ssh logs in as, e.g. user: kilork under ssh:',
    },
    {
      name: 'a host after user@',
      home: () =>
        sparkrunHome({ lab: `name: lab\nhosts:\n  - spark1\n  - "kilork@-oProxyCommand=touch ${touched}"\n` }),
      expect: (home) =>
        `${clusterFile(home)}:4: hosts[1] "kilork@-oProxyCommand=touch ${touched}" has no host name after 'kilork@'; ` +
        'write the ssh target of the node, e.g. spark1 or user@10.0.0.1',
    },
  ];
  for (const c of cases) {
    const home = c.home();
    for (const argv of [
      ['launch', recipe, '--cluster', 'lab', '--dry-run'],
      ['preflight', recipe, '--cluster', 'lab'],
    ]) {
      const fake = fakeNodes();
      const r = await cli(argv, { ...fake.env(), HOME: home });
      assert.deepEqual(readdirSync(proxyDir), [], `${c.name}, ${argv[0]}: the ProxyCommand ran`);
      assert.equal(r.code, 2, `${c.name}, ${argv[0]}: ${r.stderr}`);
      assert.equal(r.stderr, `spark: ${c.expect(home)}\n`, `${c.name}, ${argv[0]}`);
      assert.deepEqual(fake.calls(), [], `${c.name}, ${argv[0]}: a node was asked`);
    }
  }
});

test('hosts and users of a sparkrun cluster: what ssh cannot take is refused, in the words of the TOML cluster', async () => {
  const cases: [string, RegExp][] = [
    ['hosts:\n  - ""\n', /:3: hosts\[0\] "" is empty: it must name the node to ssh to; /],
    ['hosts:\n  - "spark 1"\n', /:3: hosts\[0\] "spark 1" contains whitespace or a control character; /],
    ['hosts:\n  - "spark1\\u0007"\n', /:3: hosts\[0\] "spark1\\u0007" contains whitespace or a control character; /],
    [
      'hosts:\n  - "spark1$(id)"\n',
      /:3: hosts\[0\] "spark1\$\(id\)" contains "\$", which is not part of a host name or address/,
    ],
    ['hosts:\n  - "@spark1"\n', /:3: hosts\[0\] "@spark1" has no user name before '@'; /],
    ['hosts:\n  - "a b@spark1"\n', /contains whitespace or a control character; /],
    ['hosts:\n  - 7\n', /:3: hosts\[0\] 7 must be a host name or address, got (an? )?(integer|number)/],
    ['user: "a b"\nhosts:\n  - spark1\n', /:2: user "a b" contains whitespace or a control character; /],
    [
      'user: "kilork@lab"\nhosts:\n  - spark1\n',
      /:2: user "kilork@lab" contains "@", which is not part of a user name/,
    ],
  ];
  const fake = fakeNodes();
  for (const [text, re] of cases) {
    const home = sparkrunHome({ lab: `name: lab\n${text}` });
    await assert.rejects(
      openCluster('lab', { env: { ...fake.env(), HOME: home }, cwd: process.cwd() }),
      (err: unknown) => {
        assert.ok(err instanceof SparkError && err.code === 'E_CLUSTER' && err.exitCode === 2, String(err));
        assert.ok(err.message.startsWith(join(home, '.config', 'sparkrun', 'clusters', 'lab.yaml')), err.message);
        assert.match(err.message, re);
        return true;
      },
    );
  }
  assert.deepEqual(fake.calls(), []);
});

test('ssh is given its options, then --, then the destination and the command', async () => {
  const fake = fakeNodes();
  const home = sparkrunHome({ lab: LAB });
  const env = { ...fakeHosts(fake, [sparkHost(1), sparkHost(2)]), HOME: home };
  await openCluster('lab', { env, cwd: process.cwd() });
  const calls = fake.calls().filter((c) => c.prog === 'ssh');
  assert.equal(calls.length, 2);
  for (const c of calls) {
    // Exactly the options, then `--`: nothing before it can be a host, nothing after it an option.
    assert.deepEqual(c.argv.slice(0, 6), ['-o', 'BatchMode=yes', '-o', 'ConnectTimeout=15', '--', c.host]);
    assert.equal(c.argv.length, 7);
  }
});

test('preflight --local with a sparkrun cluster asks no node: this node is checked, and an info finding names the cross-node rules that could not run', async () => {
  const w = await world();
  const recipe = await anyRecipe();
  const fake = fakeNodes();
  const home = sparkrunHome({ lab: LAB }, { hfCache: w.hfCache });
  // Neither node answers ssh: a run that asked them would stop (E_CLUSTER).
  const env = {
    ...fake.env({
      'kilork@spark1 ssh': { exit: 255, stderr: 'ssh: connect to host spark1 port 22: No route to host\n' },
      'kilork@spark2 ssh': { exit: 255, stderr: 'ssh: connect to host spark2 port 22: No route to host\n' },
    }),
    HOME: home,
  };
  const file = join(home, '.config', 'sparkrun', 'clusters', 'lab.yaml');
  for (const flags of [['--local'], ['--node-rank', '0']]) {
    const r = await cli(['preflight', recipe, '--cluster', 'lab', '--sysfs', w.sysfs, '--json', ...flags], env);
    assert.deepEqual(fake.calls(), [], `${flags.join(' ')}: a node was asked`);
    assert.ok(r.code === 0 || r.code === 1, `${flags.join(' ')}: exit ${r.code}: ${r.stderr}`);
    const report = JSON.parse(r.stdout) as {
      mode: string;
      cluster: string;
      node: { rank: number; host: string } | null;
      family: { name: string };
      findings: { rule: string; severity: string; message: string; where: string }[];
      ran: string[];
      skipped: { rule: string; reason: string }[];
    };
    assert.equal(report.mode, 'local');
    assert.equal(report.cluster, file);
    assert.deepEqual(report.node, flags[0] === '--local' ? null : { rank: 0, host: 'kilork@spark1' });
    // The rules that compare the nodes' facts, as they apply to this recipe.
    const compared = RULES.filter(
      (rule) =>
        rule.scope === 'cluster' &&
        rule.engines.includes('vllm') &&
        (rule.families === undefined || rule.families.includes(report.family.name as never)),
    ).map((rule) => rule.id);
    assert.ok(compared.includes('nodes.reachable'));
    assert.deepEqual(
      report.findings.filter((f) => f.rule === 'cluster.local-only'),
      [
        {
          rule: 'cluster.local-only',
          severity: 'info',
          message:
            '--local checks this node only, and sparkrun stores no fabric addresses: not run: cluster.fabric-range, rendezvous.subnet ' +
            `(they need every node's fabric address); ${compared.join(', ')} (they compare the nodes)`,
          where: file,
          fix: 'run spark preflight without --local to check every node over ssh, or give the addresses in a spark cluster file',
        },
      ],
    );
    const reason = "it needs every node's fabric address: sparkrun stores none, and --local asks no other node";
    assert.deepEqual(
      report.skipped.filter((s) => s.reason === reason).map((s) => s.rule),
      ['cluster.fabric-range', 'rendezvous.subnet'],
    );
    assert.ok(!report.ran.includes('cluster.fabric-range') && !report.ran.includes('rendezvous.subnet'));
    // The node rules ran on this machine as node 0 (they need no address).
    if (flags[0] === '--node-rank') assert.ok(report.ran.includes('fabric.hca'), report.ran.join(' '));
  }
  // Without --local the nodes are asked, and one that does not answer stops the run as before.
  const all = await cli(['preflight', recipe, '--cluster', 'lab', '--sysfs', w.sysfs], env);
  assert.equal(all.code, 2, all.stderr);
  assert.match(all.stderr, /could not find kilork@spark1's on the node .*it did not answer over ssh/);
});

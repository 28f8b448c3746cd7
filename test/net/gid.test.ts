import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hcaListMatches, parseHcaList } from '../../src/net/hca-list.js';
import { gidAddress, gidInRange, parseCidr, parseIpv6 } from '../../src/net/ip.js';
import { gidPolicy, scanGids } from '../../src/net/gid.js';
import { cli } from '../helpers/cli.js';
import { buildSysfs, FE80, mapped, typical, V1, V2, ZERO } from '../helpers/sysfs.js';

const IPV6 = '2001:0db8:0000:0000:0000:0000:0000:0011';
const NODE_IP = '192.168.200.11';

async function gid(args: string[], env: NodeJS.ProcessEnv = {}) {
  const r = await cli(['gid', ...args, '--json'], env);
  return { ...r, report: r.stdout ? JSON.parse(r.stdout) : undefined };
}

test('the typical 4-entry table gives index 3', async () => {
  const sysfs = buildSysfs({ rocep1s0f0: { 1: typical(NODE_IP) } });
  const r = await gid(['--hca', 'rocep1s0f0', '--sysfs', sysfs]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.report.index, 3);
  assert.equal(r.report.hcas[0].entry.address, NODE_IP);
  assert.equal(r.report.hcas[0].entry.type, 'RoCE v2');
  assert.equal(r.report.hcas[0].entry.ndev, 'enp1s0f0np0');
  assert.deepEqual(
    r.report.hcas[0].candidates.map((c: { index: number }) => c.index),
    [0, 1, 2, 3],
  );
  const text = await cli(['gid', '--hca', 'rocep1s0f0', '--sysfs', sysfs]);
  assert.equal(
    text.stdout,
    `rocep1s0f0 port 1: GID index 3 (${NODE_IP} RoCE v2 enp1s0f0np0)\nGID index 3 on every HCA\n`,
  );
  const only = await cli(['gid', '--hca', 'rocep1s0f0', '--sysfs', sysfs, '--index-only']);
  assert.equal(only.stdout, '3\n');
});

test('an extra IPv6 entry shifts the index to 5', async () => {
  const port = typical(NODE_IP);
  port.gids.splice(2, 0, [IPV6, V1, 'enp1s0f0np0'], [IPV6, V2, 'enp1s0f0np0']);
  const sysfs = buildSysfs({ rocep1s0f0: { 1: port } });
  const r = await gid(['--hca', 'rocep1s0f0', '--sysfs', sysfs]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.report.index, 5);
  assert.equal(r.report.hcas[0].candidates[2].reason, 'IPv6, wanted AF_INET');
  // Asking for IPv6 instead picks the global IPv6 v2 entry.
  const v6 = await gid(['--hca', 'rocep1s0f0', '--sysfs', sysfs], { NCCL_IB_ADDR_FAMILY: 'AF_INET6' });
  assert.equal(v6.report.index, 3);
});

test('IPv4 lost (only fe80 entries): exit 1 listing the candidates', async () => {
  const sysfs = buildSysfs({
    rocep1s0f0: { 1: { gids: [[FE80, V1, 'enp1s0f0np0'], [FE80, V2, 'enp1s0f0np0'], [ZERO], [ZERO]] } },
  });
  const r = await gid(['--hca', 'rocep1s0f0', '--sysfs', sysfs]);
  assert.equal(r.code, 1);
  assert.equal(r.report.index, null);
  assert.equal(r.report.ok, false);
  assert.match(
    r.report.problems[0],
    /^rocep1s0f0 port 1: no IPv4 RoCE v2 GID entry; candidates: 0 fe80::e42:a1ff:fe2b:6a30 IB\/RoCE v1 enp1s0f0np0 \(link-local \(fe80::\/64\)\); 1 fe80::e42:a1ff:fe2b:6a30 RoCE v2 enp1s0f0np0 \(link-local/,
  );
  assert.match(
    r.stderr,
    /^\{"error":\{"code":"E_CHECK_FAILED","message":"rocep1s0f0 port 1: no IPv4 RoCE v2 GID entry; candidates: /,
  );
  assert.equal(r.stderr.split('\n').length, 2, 'one line');
  const text = await cli(['gid', '--hca', 'rocep1s0f0', '--sysfs', sysfs]);
  assert.match(text.stderr, /^spark gid: rocep1s0f0 port 1: no IPv4 RoCE v2 GID entry; candidates: 0 fe80::/);
  const only = await cli(['gid', '--hca', 'rocep1s0f0', '--sysfs', sysfs, '--index-only']);
  assert.equal(only.code, 1);
  assert.equal(only.stdout.trim(), '');
});

test('two HCAs that disagree: exit 1 naming both indexes', async () => {
  const shifted = typical('192.168.200.12', 'enP2p1s0f0np0');
  shifted.gids.splice(2, 0, [IPV6, V1], [IPV6, V2]);
  const sysfs = buildSysfs({ rocep1s0f0: { 1: typical(NODE_IP) }, roceP2p1s0f0: { 1: shifted } });
  const r = await gid(['--hca', 'rocep1s0f0,roceP2p1s0f0', '--sysfs', sysfs]);
  assert.equal(r.code, 1);
  assert.deepEqual(
    r.report.hcas.map((h: { hca: string; index: number }) => [h.hca, h.index]),
    [
      ['roceP2p1s0f0', 5],
      ['rocep1s0f0', 3],
    ],
  );
  assert.equal(r.report.index, null);
  assert.match(
    r.report.problems[0],
    /^the HCAs disagree \(roceP2p1s0f0:1 -> 5, rocep1s0f0:1 -> 3\); one GID index must be valid on every HCA of the node: no index is usable on all of them; roceP2p1s0f0:1 candidates: .*\| rocep1s0f0:1 candidates: 0 /,
  );
  // With the same shift on both, they agree again.
  const both = buildSysfs({ a: { 1: shifted }, b: { 1: shifted } });
  assert.equal((await gid(['--hca', 'a,b', '--sysfs', both])).report.index, 5);
});

test('disagreeing HCAs with an index usable on both suggest pinning it', async () => {
  const a = typical(NODE_IP);
  a.gids.splice(4, 2, [mapped(NODE_IP), V1], [mapped(NODE_IP), V2]); // a second v2 entry at 5
  const b = typical('192.168.200.12');
  b.gids.splice(2, 0, [IPV6, V1], [IPV6, V2]); // -> 5
  const sysfs = buildSysfs({ a: { 1: a }, b: { 1: b } });
  const r = await gid(['--sysfs', sysfs]);
  assert.equal(r.code, 1);
  assert.deepEqual(r.report.commonIndexes, [5]);
  assert.match(
    r.report.problems[0],
    /index 5 is usable on all of them: pin NCCL_IB_GID_INDEX and B12X_ROCE_GID_INDEX to it/,
  );
});

test('an address range excludes the entry outside it', async () => {
  const port = typical('10.0.0.5');
  port.gids.splice(4, 0, [mapped(NODE_IP), V1], [mapped(NODE_IP), V2]);
  const sysfs = buildSysfs({ rocep1s0f0: { 1: port } });
  assert.equal((await gid(['--sysfs', sysfs])).report.index, 3);
  const flag = await gid(['--sysfs', sysfs, '--addr-range', '192.168.200.0/24']);
  assert.equal(flag.report.index, 5);
  assert.equal(flag.report.addrRange, '192.168.200.0/24');
  assert.equal(flag.report.hcas[0].candidates[3].reason, 'outside 192.168.200.0/24');
  const env = await gid(['--sysfs', sysfs], { NCCL_IB_ADDR_RANGE: '192.168.200.0/24' });
  assert.equal(env.report.index, 5);
  const none = await gid(['--sysfs', sysfs, '--addr-range', '172.16.0.0/12']);
  assert.equal(none.code, 1);
  assert.match(none.report.problems[0], /no IPv4 RoCE v2 in 172\.16\.0\.0\/12 GID entry/);
  const bad = await gid(['--sysfs', sysfs, '--addr-range', '192.168.200.0']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--addr-range must be an IPv4 CIDR/);
  // NCCL ignores a malformed NCCL_IB_ADDR_RANGE; so do we, with a warning.
  const ignored = await gid(['--sysfs', sysfs], { NCCL_IB_ADDR_RANGE: 'nonsense' });
  assert.equal(ignored.report.index, 3);
  assert.match(
    ignored.report.warnings[0],
    /NCCL_IB_ADDR_RANGE='nonsense' is not a valid AF_INET CIDR; NCCL ignores it/,
  );
});

test('RoCE v1 only: exit 1 unless NCCL_IB_ROCE_VERSION_NUM=1', async () => {
  const sysfs = buildSysfs({ rocep1s0f0: { 1: { gids: [[FE80, V1], [mapped(NODE_IP), V1], [ZERO]] } } });
  const r = await gid(['--sysfs', sysfs]);
  assert.equal(r.code, 1);
  assert.match(r.report.problems[0], /1 192\.168\.200\.11 IB\/RoCE v1 \(RoCE v1, wanted v2\)/);
  const v1 = await gid(['--sysfs', sysfs], { NCCL_IB_ROCE_VERSION_NUM: '1' });
  assert.equal(v1.code, 0);
  assert.equal(v1.report.index, 1);
  assert.equal((await gid(['--sysfs', sysfs, '--roce-version', '1'])).report.index, 1);
});

test('NCCL_IB_HCA syntax selects devices and ports (^ exclude, = exact, :port, prefixes)', async () => {
  const sysfs = buildSysfs({
    mlx5_0: { 1: typical(NODE_IP) },
    mlx5_1: { 1: typical(NODE_IP), 2: { gids: [[FE80, V2]] } },
    mlx5_10: { 1: typical(NODE_IP) },
  });
  const ports = async (env: NodeJS.ProcessEnv, args: string[] = []) =>
    (await gid(['--sysfs', sysfs, ...args], env)).report.hcas.map(
      (h: { hca: string; port: number }) => `${h.hca}:${h.port}`,
    );
  // Without '=', names are prefixes, as in NCCL: mlx5_1 also selects mlx5_10.
  assert.deepEqual(await ports({ NCCL_IB_HCA: 'mlx5_1:1' }), ['mlx5_1:1', 'mlx5_10:1']);
  assert.deepEqual(await ports({ NCCL_IB_HCA: '=mlx5_1:1' }), ['mlx5_1:1']);
  assert.deepEqual(await ports({ NCCL_IB_HCA: 'mlx5_1' }), ['mlx5_1:1', 'mlx5_1:2', 'mlx5_10:1']);
  assert.deepEqual(await ports({ NCCL_IB_HCA: '=mlx5_1' }), ['mlx5_1:1', 'mlx5_1:2']);
  assert.deepEqual(await ports({ NCCL_IB_HCA: '^mlx5_1' }), ['mlx5_0:1']);
  assert.deepEqual(await ports({ NCCL_IB_HCA: '^=mlx5_1' }), ['mlx5_0:1', 'mlx5_10:1']);
  assert.deepEqual(await ports({ NCCL_IB_HCA: '=mlx5_0:1,mlx5_10:1' }), ['mlx5_0:1', 'mlx5_10:1']);
  assert.deepEqual(await ports({ B12X_ROCE_HCA: 'mlx5_0' }), ['mlx5_0:1']);
  assert.deepEqual(await ports({ NCCL_IB_HCA: 'mlx5_0', B12X_ROCE_HCA: 'mlx5_10' }), ['mlx5_0:1']);
  assert.deepEqual(await ports({ NCCL_IB_HCA: 'mlx5_0' }, ['--hca', '=mlx5_1', '--port', '1']), ['mlx5_1:1']);
  // mlx5_1 port 2 has only a link-local entry: selecting it fails.
  assert.equal((await gid(['--sysfs', sysfs, '--hca', '=mlx5_1'])).code, 1);
  const missing = await gid(['--sysfs', sysfs, '--hca', 'mlx5_0,rocep9s0']);
  assert.equal(missing.code, 1);
  assert.match(
    missing.report.problems[0],
    /^HCA 'rocep9s0' not found \(present: mlx5_0:1, mlx5_1:1, mlx5_1:2, mlx5_10:1\)$/,
  );
});

test('ports that are down or not Ethernet fail; a missing sysfs is an environment error (exit 3)', async () => {
  const down = typical(NODE_IP);
  down.state = '1: DOWN';
  const ib = typical(NODE_IP);
  ib.linkLayer = 'InfiniBand';
  const sysfs = buildSysfs({ a: { 1: down }, b: { 1: ib } });
  const r = await gid(['--sysfs', sysfs]);
  assert.equal(r.code, 1);
  assert.deepEqual(r.report.problems, [
    "a port 1: port state is '1: DOWN', not ACTIVE (NCCL skips it; check the cable and 'ip link')",
    'b port 1: link layer is InfiniBand, not RoCE (Ethernet)',
  ]);
  const nothing = await gid(['--sysfs', '/nonexistent-sysfs']);
  assert.equal(nothing.code, 3);
  assert.match(nothing.stderr, /"code":"E_SYSFS"/);
});

test('--check-index validates a pinned index on every HCA', async () => {
  const sysfs = buildSysfs({ a: { 1: typical(NODE_IP) }, b: { 1: typical('192.168.200.12') } });
  const ok = await gid(['--sysfs', sysfs, '--check-index', '3']);
  assert.equal(ok.code, 0);
  assert.equal(ok.report.index, 3);
  const bad = await gid(['--sysfs', sysfs, '--check-index', '0']);
  assert.equal(bad.code, 1);
  assert.match(bad.report.problems[0], /^a port 1: pinned GID index 0 is not usable \(link-local \(fe80::\/64\)\)/);
  const unset = await gid(['--sysfs', sysfs, '--check-index', '9']);
  assert.match(unset.report.problems[0], /pinned GID index 9 is not usable \(not configured\)/);
});

test('address helpers: IPv6 text, mapped IPv4, CIDR matching', () => {
  assert.equal(gidAddress(parseIpv6(mapped('10.1.2.3'))!), '10.1.2.3');
  assert.equal(gidAddress(parseIpv6(FE80)!), 'fe80::e42:a1ff:fe2b:6a30');
  assert.equal(gidAddress(parseIpv6('2001:db8::1')!), '2001:db8::1');
  assert.deepEqual(parseIpv6('::ffff:1.2.3.4'), parseIpv6(mapped('1.2.3.4')));
  assert.equal(parseIpv6('1::2::3'), undefined);
  assert.equal(parseIpv6('1:2:3:4:5:6:7'), undefined);
  assert.equal(parseIpv6('12345::'), undefined);
  const gidOf = (ip: string) => parseIpv6(mapped(ip))!;
  assert.equal(gidInRange(gidOf('192.168.200.7'), parseCidr('192.168.200.0/24')!), true);
  assert.equal(gidInRange(gidOf('192.168.201.7'), parseCidr('192.168.200.0/24')!), false);
  assert.equal(gidInRange(gidOf('192.168.201.7'), parseCidr('192.168.200.0/23')!), true);
  assert.equal(gidInRange(gidOf('10.0.0.1'), parseCidr('0.0.0.0/0')!), true);
  assert.equal(gidInRange(parseIpv6('2001:db8::11')!, parseCidr('2001:db8::/32')!), true);
  assert.equal(gidInRange(parseIpv6('2001:db9::11')!, parseCidr('2001:db8::/32')!), false);
  assert.equal(parseCidr('10.0.0.0/33'), undefined);
  assert.equal(parseCidr('10.0.0/8'), undefined);
});

test('NCCL_IB_HCA parsing and the policy from the environment', () => {
  assert.deepEqual(parseHcaList('^=mlx5_0:1,mlx5_1'), {
    exclude: true,
    exact: true,
    items: [{ name: 'mlx5_0', port: 1 }, { name: 'mlx5_1' }],
    text: '^=mlx5_0:1,mlx5_1',
  });
  assert.equal(hcaListMatches(parseHcaList(''), 'x', 1), true);
  assert.equal(hcaListMatches(parseHcaList('mlx5_0:2'), 'mlx5_0', 1), false);
  const p = gidPolicy({
    NCCL_IB_ADDR_FAMILY: 'AF_INET6',
    NCCL_IB_ROCE_VERSION_NUM: '1',
    NCCL_IB_ADDR_RANGE: '2001:db8::/32',
  });
  assert.equal(p.family, 'AF_INET6');
  assert.equal(p.roceVersion, 1);
  assert.equal(p.range?.prefix, 32);
  assert.equal(gidPolicy({ NCCL_IB_ROCE_VERSION_NUM: '' }).roceVersion, 2);
  assert.match(gidPolicy({ NCCL_IB_ADDR_FAMILY: 'ipv4' }).warnings[0]!, /NCCL uses AF_INET/);
  assert.equal(gidPolicy({ NCCL_IB_ADDR_FAMILY: 'inet6' }).family, 'AF_INET', 'NCCL matches the exact string only');
  assert.equal(gidPolicy({}, { family: 'inet6' }).family, 'AF_INET6');
  assert.deepEqual(parseHcaList('a, b').items, [{ name: 'a' }, { name: ' b' }]);
  assert.throws(() => gidPolicy({}, { family: 'ipv4' }), /--family must be AF_INET or AF_INET6/);
  // The scan itself, without the CLI.
  const sysfs = buildSysfs({ a: { 1: typical(NODE_IP) } });
  assert.equal(scanGids({ sysfs, policy: gidPolicy({}) }).index, 3);
});

// A fake cluster of DGX Spark nodes for preflight and launch tests, on top of fake-node.ts:
// each host has its own files under the same absolute paths (FAKE_ROOT/...), its own sysfs
// (RDMA devices with their GID tables, interfaces), its own nvidia-smi, uname, date, df and ip,
// its own /proc/net (routes, listening sockets), its own docker image id, and spark or not.
// Everything is written at test time; by default the nodes agree and pass every check.
import { chmodSync, cpSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { binPath } from './cli.js';
import { fakeNodes, type Behavior, type FakeNodes } from './fake-node.js';
import { FABRIC, freePort, repoFile, write, DSV41, PACKED, REVISION, edit } from './preflight.js';
import { makeSnapshot } from './synth.js';
import { buildSysfs, typical, FE80, V1, V2, ZERO } from './sysfs.js';
import { tempDir } from './tmp.js';

export interface Route {
  iface: string;
  /** `a.b.c.d/n`, or `default`. */
  dest: string;
  /** Next hop; absent for a directly connected subnet. */
  via?: string;
}

export interface HostSpec {
  name: string;
  /** `a.b.c.d/n` written in the cluster file (the prefix is dropped when `prefix` is false). */
  fabric: string;
  dist?: string;
  /** The host's addresses with prefixes, as `ip -o addr` lists them (default: fabric and dist). */
  addresses?: string[];
  /** Default: a direct route to each address's subnet. */
  routes?: Route[];
  driver: string;
  cuda: string;
  kernel: string;
  /** Seconds the host's clock is off. */
  clockOffset: number;
  /** `docker image inspect` answer: an id, or null for "No such image". */
  imageId: string | null;
  /** Run real spark as SPARK_REMOTE_BIN on this host, or a stand-in printing this version. */
  spark: 'real' | 'none' | { version: string };
  /** KiB df reports free (default: plenty). */
  freeKb?: number;
  /** TCP ports something listens on (in /proc/net/tcp): numbers, or the cluster's serving or rendezvous port. */
  listening: (number | 'serving' | 'rendezvous')[];
  /** GID table of port 1 of each HCA (default: the typical one for the fabric address). */
  gids?: 'typical' | 'link-local-only';
  /** Whether its filesystems open files with O_DIRECT (default: yes; `dd iflag=direct` fails when not; see setODirect). */
  oDirect?: boolean;
  /** What `uname -m` says (default: this machine's). */
  machine?: string;
  /** Its own copy of the NAS (default: the shared one, a symlink). */
  ownNas?: (nas: string) => void;
}

export const REMOTE_BIN = 'spark-node';
export const IMAGE_ID = 'sha256:' + 'ab'.repeat(32);

export function defaultHosts(n = 4): HostSpec[] {
  return Array.from({ length: n }, (_, i) => ({
    name: `spark${i + 1}`,
    fabric: `192.168.200.${i + 1}/24`,
    driver: '580.95.05',
    cuda: '13.0',
    kernel: '6.11.0-1016-nvidia',
    clockOffset: 0,
    imageId: IMAGE_ID,
    spark: 'none' as const,
    listening: [],
  }));
}

export interface FakeCluster {
  fake: FakeNodes;
  /** The path every host has its own files under (replaced per host by the fake ssh). */
  root: string;
  /** Where host `name`'s files really are. */
  hostRoot(name: string): string;
  /** The shared NAS: hf_cache and the snapshot. */
  nas: string;
  hfCache: string;
  servingPort: number;
  distPort: number;
  /** The dsv41 seed recipe with its wrapper and port pointed into the cluster. */
  dsv41Text: string;
  /** The packed recipe with its pack directory pointed into the cluster. */
  packedText: string;
  recipe(text: string, name?: string): string;
  /** A cluster file for the hosts (extra lines go at the top level). */
  clusterFile(opts?: {
    extra?: string;
    nccl?: Record<string, string>;
    name?: string;
    prefixes?: boolean;
    nodeEnv?: Record<string, Record<string, string>>;
  }): string;
  env(behavior?: Behavior, extra?: NodeJS.ProcessEnv): NodeJS.ProcessEnv;
  hosts: HostSpec[];
  /** Makes host `name`'s filesystems take O_DIRECT, or refuse it, from now on (for the sh probe's dd). */
  setODirect(name: string, on: boolean): void;
}

const sh = (body: string) => `#!/bin/sh\n${body}\n`;

function hostBin(dir: string, name: string, body: string): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, name), sh(body));
  chmodSync(join(dir, name), 0o755);
}

/** /proc/net/route text for the routes (little-endian hex, as the kernel writes it). */
export function procRoutes(routes: Route[]): string {
  const hex = (ip: string) =>
    ip
      .split('.')
      .map((b) => Number(b).toString(16).padStart(2, '0').toUpperCase())
      .reverse()
      .join('');
  const mask = (n: number) =>
    hex([24, 16, 8, 0].map((s) => ((n === 0 ? 0 : (0xffffffff << (32 - n)) >>> 0) >>> s) & 0xff).join('.'));
  const lines = ['Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT'];
  for (const r of routes) {
    const [net, len] = r.dest === 'default' ? ['0.0.0.0', 0] : [r.dest.split('/')[0]!, Number(r.dest.split('/')[1])];
    lines.push(
      [
        r.iface,
        hex(net),
        hex(r.via ?? '0.0.0.0'),
        r.via ? '0003' : '0001',
        '0',
        '0',
        '0',
        mask(len),
        '0',
        '0',
        '0',
      ].join('\t'),
    );
  }
  return lines.join('\n') + '\n';
}

/** /proc/net/tcp with a listening socket on each port. */
function procTcp(ports: number[]): string {
  const head = '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode';
  const rows = ports.map(
    (p, i) =>
      `   ${i}: 00000000:${p.toString(16).toUpperCase().padStart(4, '0')} 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 ${1000 + i}`,
  );
  return [head, ...rows].join('\n') + '\n';
}

function subnetOf(cidr: string): string {
  const [ip, len] = cidr.split('/');
  const n = Number(len);
  const b = ip!.split('.').map(Number);
  const v = ((b[0]! << 24) | (b[1]! << 16) | (b[2]! << 8) | b[3]!) >>> 0;
  const m = n === 0 ? 0 : (0xffffffff << (32 - n)) >>> 0;
  const net = (v & m) >>> 0;
  return `${[24, 16, 8, 0].map((s) => (net >>> s) & 0xff).join('.')}/${n}`;
}

let pristine: string | undefined;

/** The default synthetic snapshot, made once per process: each cluster gets a copy of its own to change. */
function pristineSnapshot(): string {
  pristine ??= makeSnapshot({ dir: join(tempDir('spark-fakecluster-snap-'), 'snap') }).dir;
  return pristine;
}

export async function fakeCluster(hosts: HostSpec[] = defaultHosts()): Promise<FakeCluster> {
  const fake = fakeNodes();
  const base = tempDir('spark-fakecluster-');
  const root = join(base, 'node');
  const nas = join(base, 'nas');
  const hfCache = join(root, 'nas', 'hf');
  const modelDir = join(nas, 'hf', 'hub', 'models--deepseek-ai--DeepSeek-V4.1-Flash');
  cpSync(pristineSnapshot(), join(modelDir, 'snapshots', REVISION), { recursive: true });
  write(join(modelDir, 'refs', 'main'), REVISION);
  const wrapperText =
    '#!/bin/sh\nexport SPARK_ENGRAM_ROWS="$(spark engram-ranges "$SPARK_ENGRAM_DIR" --rank "$NODE_RANK" --world 4)"\nexec "$@"\n';
  const servingPort = await freePort();
  const distPort = await freePort();
  const hostsDir = join(fake.bin, '..', 'hosts');
  const hostRoot = (name: string) => join(hostsDir, name, 'root');

  for (const h of hosts) {
    const dir = join(hostsDir, h.name);
    const r = hostRoot(h.name);
    mkdirSync(r, { recursive: true });
    if (h.ownNas) {
      cpSync(nas, join(r, 'nas'), { recursive: true });
      h.ownNas(join(r, 'nas'));
    } else {
      symlinkSync(nas, join(r, 'nas'));
    }
    write(join(r, 'opt', 'aiden4x-launch.sh'), wrapperText);
    const fabricIp = h.fabric.split('/')[0]!;
    const port1 =
      h.gids === 'link-local-only'
        ? {
            linkLayer: 'Ethernet',
            state: '4: ACTIVE',
            gids: [[FE80, V1, 'enp1s0f0np0'], [FE80, V2, 'enp1s0f0np0'], [ZERO], [ZERO]] as [
              string,
              string?,
              string?,
            ][],
          }
        : typical(fabricIp);
    buildSysfs({ rocep1s0f0: { 1: port1 }, roceP2p1s0f0: { 1: port1 } }, join(r, 'sys'));
    for (const i of ['enp1s0f0np0', 'enP7s7', 'lo']) mkdirSync(join(r, 'sys', 'class', 'net', i), { recursive: true });

    const bin = join(dir, 'bin');
    hostBin(
      bin,
      'nvidia-smi',
      `cat <<'EOF'
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI ${h.driver}              Driver Version: ${h.driver}      CUDA Version: ${h.cuda}     |
+-----------------------------------------------------------------------------------------+
EOF`,
    );
    const m = h.machine !== undefined ? `elif [ "$1" = -m ]; then echo ${h.machine}; ` : '';
    hostBin(bin, 'uname', `if [ "$1" = -r ]; then echo ${h.kernel}; ${m}else exec /bin/uname "$@"; fi`);
    hostBin(bin, 'hostname', `if [ "$1" = -I ]; then echo ${fabricIp}; else echo ${h.name}; fi`);
    hostBin(bin, 'date', `now=$(/bin/date +%s); exec /bin/date -d "@$((now + ${h.clockOffset}))" "$@"`);
    const addresses = h.addresses ?? [
      h.fabric.includes('/') ? h.fabric : `${h.fabric}/24`,
      ...(h.dist ? [`${h.dist}/24`] : []),
    ];
    hostBin(
      bin,
      'ip',
      `[ "$1 $2 $3" = "-o addr show" ] || exit 1\n${addresses.map((a, i) => `echo '${i + 2}: eth${i}    inet ${a} brd 0.0.0.0 scope global eth${i}'`).join('\n')}`,
    );
    if (h.freeKb !== undefined) {
      hostBin(
        bin,
        'df',
        `echo 'Filesystem     1024-blocks      Used Available Capacity Mounted on'\necho "/dev/nvme0n1p2 1900000000 1800000000 ${h.freeKb} 99% /"`,
      );
    }
    // dd iflag=direct as on a filesystem that does (or, while hosts/H/no-o-direct exists, does
    // not) take O_DIRECT, whatever the test machine's filesystem does.
    if (h.oDirect === false) writeFileSync(join(dir, 'no-o-direct'), '');
    hostBin(
      bin,
      'dd',
      `i=; d=0; for a in "$@"; do case $a in if=*) i=$a ;; iflag=direct) d=1 ;; esac; done
if [ $d = 1 ]; then
  if [ -e '${join(dir, 'no-o-direct')}' ]; then echo "dd: failed to open '\${i#if=}': Invalid argument" >&2; exit 1; fi
  for a in "$@"; do shift; [ "$a" = iflag=direct ] || set -- "$@" "$a"; done
fi
exec /bin/dd "$@"`,
    );
    if (h.spark === 'real') hostBin(bin, REMOTE_BIN, `exec "${process.execPath}" "${binPath}" "$@"`);
    else if (h.spark !== 'none')
      hostBin(
        bin,
        REMOTE_BIN,
        `[ "$1" = --version ] && { echo ${h.spark.version}; exit 0; }\necho 'spark: unknown option' >&2; exit 2`,
      );
    const routes = h.routes ?? addresses.map((a, i) => ({ iface: `eth${i}`, dest: subnetOf(a) }));
    write(join(dir, 'proc', 'net', 'route'), procRoutes(routes));
    write(
      join(dir, 'proc', 'net', 'tcp'),
      procTcp(h.listening.map((p) => (p === 'serving' ? servingPort : p === 'rendezvous' ? distPort : p))),
    );
    write(join(dir, 'proc', 'net', 'tcp6'), procTcp([]).split('\n')[0] + '\n');
  }

  const behavior: Behavior = {};
  for (const h of hosts) {
    behavior[`${h.name} docker image`] =
      h.imageId === null
        ? { exit: 1, stderr: `Error response from daemon: No such image: x\n` }
        : { stdout: `${h.imageId}\n` };
  }

  let count = 0;
  const cluster: FakeCluster = {
    fake,
    root,
    hostRoot,
    nas,
    hfCache,
    servingPort,
    distPort,
    hosts,
    dsv41Text: edit(
      edit(repoFile(DSV41), '/home/kilork/aiden4x-launch.sh', join(root, 'opt', 'aiden4x-launch.sh')),
      'port = 30000',
      `port = ${servingPort}`,
    ),
    packedText: edit(
      edit(repoFile(PACKED), /\/var\/lib\/spark\/engram/g, join(root, 'engram')),
      'port = 30000',
      `port = ${servingPort}`,
    ),
    recipe: (text, name) => write(join(base, 'recipes', name ?? `r${count++}`, 'recipe.toml'), text),
    clusterFile(opts = {}) {
      const nccl = { ...FABRIC, ...(opts.nccl ?? {}) };
      const lines = [
        `name = "${opts.name ?? 'fake'}"`,
        `hf_cache = "${hfCache}"`,
        `dist_port = ${distPort}`,
        opts.extra ?? '',
        ...hosts.map((h) =>
          [
            '',
            '[[nodes]]',
            `host = "${h.name}"`,
            `fabric_addr = "${opts.prefixes === false ? h.fabric.split('/')[0] : h.fabric}"`,
            ...(h.dist ? [`dist_addr = "${h.dist}"`] : []),
            ...(opts.nodeEnv?.[h.name]
              ? ['[nodes.env]', ...Object.entries(opts.nodeEnv[h.name]!).map(([k, v]) => `${k} = "${v}"`)]
              : []),
          ].join('\n'),
        ),
        '\n[nccl]',
        ...Object.entries(nccl).map(([k, v]) => `${k} = "${v}"`),
      ];
      return write(join(base, `cluster-${opts.name ?? 'fake'}-${count++}.toml`), lines.join('\n') + '\n');
    },
    setODirect(name, on) {
      const flag = join(hostsDir, name, 'no-o-direct');
      if (on) rmSync(flag, { force: true });
      else writeFileSync(flag, '');
    },
    env: (extraBehavior = {}, extra = {}) =>
      fake.env({ ...behavior, ...extraBehavior }, { FAKE_ROOT: root, SPARK_REMOTE_BIN: REMOTE_BIN, ...extra }),
  };
  return cluster;
}

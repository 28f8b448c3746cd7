// A real cluster on one machine for `npm run test:cluster` (docs/launch.md, "The cluster test
// bed"): N nodes as network namespaces on one bridge, each with its own sshd and its own Docker
// daemon, and an image imported from a root filesystem tarball. Only addresses of this bed are
// ever contacted. Every process it starts is ended by pid at teardown, which runs when the
// tests end however they end (after(), process exit, SIGINT/SIGTERM/SIGHUP).
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { randomBytes } from 'node:crypto';
import { binPath } from '../helpers/cli.js';
import { IMAGE, buildRootfsTarball } from './image.js';
import { createNode, dockerHostOf, startNodeDaemons, writeSshdConfig, type BedNode, type NodeSpec } from './node.js';
import { endPids, ended, pidsInNetns, run } from './processes.js';

const execFileAsync = promisify(execFile);

export interface Bed {
  dir: string;
  /** The bridge joining the nodes (in this machine's namespace). */
  bridge: string;
  nodes: BedNode[];
  /** Each node's own files appear here (node r: nodes[r].localDir). */
  localMount: string;
  /** Files every node sees at the same path (a NAS). */
  shared: string;
  /** An address on the bed's subnet that no node holds (a node that is down). */
  unusedAddr: string;
  /** The environment spark runs with: the bed's ssh and spark on the nodes. */
  env: NodeJS.ProcessEnv;
  /** docker against node r's daemon directly (never through spark). */
  docker(rank: number, args: string[]): string;
  /** A container's output on node r, stdout and stderr together as docker keeps them. */
  logs(rank: number, container: string): string;
  /** `docker ps -a` of node r's daemon: name → state and exit code. */
  containers(rank: number): Map<string, { state: string; exitCode: number }>;
  /** Ends every process of the bed by pid and removes its files; returns pids that outlived it. */
  teardown(): { leftover: number[] };
}

/** Why this machine cannot run the bed, or undefined. */
export function bedUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return 'the cluster test bed needs root (network namespaces, sshd, dockerd)';
  const missing = [
    'dockerd',
    'docker',
    'sshd',
    'ssh',
    'ssh-keygen',
    'ip',
    'unshare',
    'nsenter',
    'setpriv',
    'busybox',
    'tar',
  ].filter((p) => !['/usr/sbin', '/usr/bin', '/usr/local/bin', '/sbin', '/bin'].some((d) => existsSync(join(d, p))));
  if (missing.length > 0)
    return `the cluster test bed needs ${missing.join(', ')}: apt-get install docker.io openssh-server iproute2 busybox-static util-linux`;
  return undefined;
}

const BED_PREFIX = 'spark-bed-';

/** What a bed's owner records in its directory, so that a later bed can end what it left. */
interface BedRecord {
  owner: number;
  bridge: string;
  netns: string[];
}

/**
 * Ends what a bed whose test process was killed outright (SIGKILL: no teardown ran) left: the
 * processes still in its nodes' namespaces (its daemons got --pdeathsig), its bridge, its files.
 * Beds whose owner still runs are left alone.
 */
function endOrphanedBeds(): void {
  for (const name of readdirSync(tmpdir()).filter((n) => n.startsWith(BED_PREFIX))) {
    const dir = join(tmpdir(), name);
    let record: BedRecord;
    try {
      record = JSON.parse(readFileSync(join(dir, 'bed.json'), 'utf8')) as BedRecord;
    } catch {
      continue; // not started far enough to own anything, or not a bed
    }
    if (!ended(record.owner)) continue;
    endPids(pidsInNetns(new Set(record.netns)), 5_000);
    try {
      run(['ip', 'link', 'del', record.bridge]);
    } catch {
      // already gone
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

function pickSubnet(): string {
  const used = run(['ip', '-o', '-4', 'addr']);
  for (let i = 0; i < 50; i++) {
    const base = `10.${200 + (randomBytes(1)[0]! % 50)}.${randomBytes(1)[0]!}`;
    if (!used.includes(` ${base}.`)) return base;
  }
  throw new Error('bed: no free 10.x.y.0/24 subnet for the bridge');
}

export async function startBed(options: { nodes: number }): Promise<Bed> {
  const why = bedUnavailable();
  if (why) throw new Error(`${why}; it does not pass silently: run it where CI runs it (bash .ci/run)`);
  endOrphanedBeds();
  const dir = mkdtempSync(join(tmpdir(), BED_PREFIX));
  const tag = `sb${randomBytes(2).toString('hex')}`;
  const bridge = `${tag}br`;
  const pids: number[] = [];
  const nodes: BedNode[] = [];
  /** Every node made so far, ready or not: what the teardown ends. */
  const created: Pick<BedNode, 'holder' | 'netns' | 'dockerHost'>[] = [];
  let bridgeMade = false;
  let done = false;
  const teardown = (): { leftover: number[] } => {
    if (done) return { leftover: [] };
    done = true;
    process.removeListener('exit', onExit);
    for (const s of SIGNALS) process.removeListener(s, onSignal);
    // Containers first (SIGKILL, so no grace period), then the daemons and everything else in
    // the nodes' namespaces (ssh sessions, containerd and its shims), then the namespace holders.
    for (const n of created) {
      try {
        const ids = run(['docker', 'ps', '-aq'], {
          env: { ...process.env, DOCKER_HOST: n.dockerHost },
          timeoutMs: 15_000,
        })
          .split('\n')
          .filter(Boolean);
        if (ids.length > 0)
          run(['docker', 'rm', '-f', ...ids], {
            env: { ...process.env, DOCKER_HOST: n.dockerHost },
            timeoutMs: 30_000,
          });
      } catch {
        // the daemon is down: its processes are ended below
      }
    }
    const holders = new Set(created.map((n) => n.holder));
    endPids(
      pids.filter((p) => !holders.has(p)),
      15_000,
    );
    const namespaces = new Set(created.map((n) => n.netns));
    endPids(
      pidsInNetns(namespaces).filter((p) => !holders.has(p)),
      5_000,
    );
    endPids([...holders, ...pids], 5_000);
    const leftover = [...new Set([...pids.filter((p) => !ended(p)), ...pidsInNetns(namespaces)])];
    if (bridgeMade) {
      try {
        run(['ip', 'link', 'del', bridge]);
      } catch {
        // already gone
      }
    }
    rmSync(dir, { recursive: true, force: true });
    return { leftover };
  };
  const onExit = () => void teardown();
  const onSignal = (signal: NodeJS.Signals) => {
    teardown();
    process.kill(process.pid, signal);
  };
  const SIGNALS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  process.on('exit', onExit);
  for (const s of SIGNALS) process.once(s, onSignal);

  try {
    const subnet = pickSubnet();
    const writeRecord = (netns: string[]) =>
      writeFileSync(join(dir, 'bed.json'), JSON.stringify({ owner: process.pid, bridge, netns } satisfies BedRecord));
    writeRecord([]);
    run(['ip', 'link', 'add', bridge, 'type', 'bridge']);
    bridgeMade = true;
    run(['ip', 'addr', 'add', `${subnet}.254/24`, 'dev', bridge]);
    run(['ip', 'link', 'set', bridge, 'up']);

    // ssh: a client key made for this run, one host key per node, known_hosts pinned to them.
    const ssh = join(dir, 'ssh');
    mkdirSync(ssh, { mode: 0o700 });
    run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', 'spark-bed', '-f', join(ssh, 'id_ed25519')]);
    writeFileSync(join(ssh, 'authorized_keys'), readFileSync(join(ssh, 'id_ed25519.pub')), { mode: 0o600 });
    const localMount = join(dir, 'local');
    const shared = join(dir, 'shared');
    mkdirSync(localMount);
    mkdirSync(shared);
    const specs: NodeSpec[] = [];
    const knownHosts: string[] = [];
    for (let rank = 0; rank < options.nodes; rank++) {
      const addr = `${subnet}.${rank + 1}`;
      const hostKey = join(ssh, `host_n${rank}`);
      run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', `n${rank}`, '-f', hostKey]);
      knownHosts.push(`${addr} ${readFileSync(`${hostKey}.pub`, 'utf8').trim().split(' ').slice(0, 2).join(' ')}`);
      const config = join(ssh, `sshd_n${rank}.conf`);
      writeSshdConfig(config, {
        addr,
        hostKey,
        authorizedKeys: join(ssh, 'authorized_keys'),
        dockerHost: dockerHostOf(dir, rank),
      });
      specs.push({ rank, tag, bridge, addr, prefix: 24, dir, localMount, sshd: { config } });
    }
    writeFileSync(join(ssh, 'known_hosts'), knownHosts.join('\n') + '\n');
    writeFileSync(
      join(ssh, 'config'),
      [
        'Host *',
        '  User root',
        `  IdentityFile ${join(ssh, 'id_ed25519')}`,
        '  IdentitiesOnly yes',
        `  UserKnownHostsFile ${join(ssh, 'known_hosts')}`,
        '  GlobalKnownHostsFile /dev/null',
        '  StrictHostKeyChecking yes',
        '  LogLevel ERROR',
        '',
      ].join('\n'),
    );
    // SPARK_SSH is one program: the real ssh with the bed's configuration.
    const bin = join(dir, 'bin');
    mkdirSync(bin);
    writeFileSync(join(bin, 'ssh'), `#!/bin/sh\nexec /usr/bin/ssh -F ${join(ssh, 'config')} "$@"\n`, { mode: 0o755 });
    // spark on the nodes: this checkout, run by this Node.
    writeFileSync(join(bin, 'spark'), `#!/bin/sh\nexec ${process.execPath} ${binPath} "$@"\n`, { mode: 0o755 });

    const made = specs.map((s) => createNode(s, (p) => pids.push(p)));
    created.push(...made);
    writeRecord(made.map((n) => n.netns));
    const tarball = buildRootfsTarball(dir);
    nodes.push(...(await Promise.all(specs.map((s, i) => startNodeDaemons(s, made[i]!, (p) => pids.push(p))))));
    // Imported once and loaded into the other daemons, so every node has the same image id (a
    // second `docker import` would make another id, which preflight rightly reports).
    const onNode = (n: BedNode) => ({ env: { ...process.env, DOCKER_HOST: n.dockerHost }, timeout: 60_000 });
    const saved = join(dir, 'image.tar');
    await execFileAsync('docker', ['import', tarball, IMAGE], onNode(nodes[0]!));
    await execFileAsync('docker', ['save', '-o', saved, IMAGE], onNode(nodes[0]!));
    await Promise.all(nodes.slice(1).map((n) => execFileAsync('docker', ['load', '-q', '-i', saved], onNode(n))));

    const docker = (rank: number, args: string[]) =>
      run(['docker', ...args], { env: { ...process.env, DOCKER_HOST: nodes[rank]!.dockerHost } });
    return {
      dir,
      bridge,
      nodes,
      localMount,
      shared,
      unusedAddr: `${subnet}.${options.nodes + 100}`,
      env: { ...process.env, SPARK_SSH: join(bin, 'ssh'), SPARK_REMOTE_BIN: join(bin, 'spark') },
      docker,
      logs: (rank, container) =>
        run(['sh', '-c', 'exec docker logs "$0" 2>&1', container], {
          env: { ...process.env, DOCKER_HOST: nodes[rank]!.dockerHost },
        }),
      containers(rank) {
        const out = docker(rank, ['ps', '-a', '--format', '{{.Names}} {{.State}}']);
        const map = new Map<string, { state: string; exitCode: number }>();
        for (const line of out.split('\n').filter(Boolean)) {
          const [name, state] = line.split(' ') as [string, string];
          const exitCode = Number(docker(rank, ['inspect', '--format', '{{.State.ExitCode}}', name]).trim());
          map.set(name, { state, exitCode });
        }
        return map;
      },
      teardown,
    };
  } catch (err) {
    teardown();
    throw err;
  }
}

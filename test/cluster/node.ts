// One node of the bed: a process holding network, mount and UTS namespaces of its own, a veth
// into the bed's bridge, its own sshd and its own Docker daemon, both started inside the
// node's namespaces. Containers run with --network host therefore share the node's network,
// as on a DGX Spark, and a bind source is looked up in the node's own files (`local`).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ended, netnsOf, run, startDaemon, waitUntil } from './processes.js';

export interface NodeSpec {
  rank: number;
  /** Interface-name prefix of this bed (≤ 8 characters). */
  tag: string;
  bridge: string;
  /** The node's address on the bed's subnet and the prefix length. */
  addr: string;
  prefix: number;
  /** The bed's directory; the node keeps its state under `<dir>/n<rank>`. */
  dir: string;
  /** A path that exists (empty) in the host: each node sees its own files there. */
  localMount: string;
  sshd: { config: string };
}

export interface BedNode {
  rank: number;
  addr: string;
  /** The node's own Docker daemon socket (`DOCKER_HOST` for docker on this node). */
  dockerHost: string;
  /** Where this node's `localMount` files really are, in the host's view. */
  localDir: string;
  /** The pid holding the namespaces, and the kernel's name of the network namespace. */
  holder: number;
  netns: string;
  /** sshd and dockerd, by pid. */
  daemons: { sshd: number; dockerd: number };
  logs: { sshd: string; dockerd: string };
}

/** Commands run inside the node: its network and mount namespaces. */
export function inNode(holder: number, argv: readonly string[]): string[] {
  return ['nsenter', '--target', String(holder), '--net', '--mount', '--uts', '--', ...argv];
}

export function dockerHostOf(dir: string, rank: number): string {
  return `unix://${join(dir, `n${rank}`, 'docker.sock')}`;
}

/** Creates the node's namespaces and links; the daemons start in startNodeDaemons. */
export function createNode(
  spec: NodeSpec,
  record: (pid: number) => void,
): Omit<BedNode, 'daemons'> & { daemons: Partial<BedNode['daemons']> } {
  const home = join(spec.dir, `n${spec.rank}`);
  const localDir = join(home, 'local');
  mkdirSync(localDir, { recursive: true });
  const logs = { sshd: join(home, 'sshd.log'), dockerd: join(home, 'dockerd.log') };
  const holder = startDaemon(
    ['unshare', '--net', '--mount', '--uts', '--propagation', 'private', '--', 'sleep', 'infinity'],
    join(home, 'holder.log'),
  );
  record(holder);
  // unshare has switched namespaces once its namespace differs from ours.
  const ours = netnsOf('self');
  const until = Date.now() + 10_000;
  while (netnsOf(holder) === ours && Date.now() < until) run(['sleep', '0.02']);
  const netns = netnsOf(holder);
  if (netns === undefined || netns === ours)
    throw new Error(`bed: node ${spec.rank}: unshare did not make a network namespace`);

  const host = `${spec.tag}h${spec.rank}`;
  const peer = `${spec.tag}n${spec.rank}`;
  run(['ip', 'link', 'add', host, 'type', 'veth', 'peer', 'name', peer]);
  run(['ip', 'link', 'set', peer, 'netns', String(holder)]);
  run(['ip', 'link', 'set', host, 'master', spec.bridge, 'up']);
  const ns = (argv: string[]) => run(inNode(holder, argv));
  ns(['hostname', `bed-n${spec.rank}`]);
  ns(['ip', 'link', 'set', 'lo', 'up']);
  ns(['ip', 'link', 'set', peer, 'name', 'eth0']);
  ns(['ip', 'addr', 'add', `${spec.addr}/${spec.prefix}`, 'dev', 'eth0']);
  ns(['ip', 'link', 'set', 'eth0', 'up']);
  // The node's own files: only this node sees localDir at localMount.
  ns(['mount', '--bind', localDir, spec.localMount]);
  return {
    rank: spec.rank,
    addr: spec.addr,
    dockerHost: dockerHostOf(spec.dir, spec.rank),
    localDir,
    holder,
    netns,
    daemons: {},
    logs,
  };
}

/** Starts sshd and dockerd in the node and waits until both answer. */
export async function startNodeDaemons(
  spec: NodeSpec,
  node: Omit<BedNode, 'daemons'> & { daemons: Partial<BedNode['daemons']> },
  record: (pid: number) => void,
): Promise<BedNode> {
  const home = join(spec.dir, `n${spec.rank}`);
  // sshd's privilege separation directory (systemd makes it at boot; containers lack it).
  mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });
  const sshd = startDaemon(inNode(node.holder, ['/usr/sbin/sshd', '-D', '-e', '-f', spec.sshd.config]), node.logs.sshd);
  record(sshd);
  node.daemons.sshd = sshd;
  const data = join(home, 'docker');
  mkdirSync(join(data, 'exec'), { recursive: true });
  const dockerd = startDaemon(
    inNode(node.holder, [
      'dockerd',
      '--iptables=false',
      '--ip6tables=false',
      '--bridge=none',
      '--data-root',
      join(data, 'root'),
      '--exec-root',
      join(data, 'exec'),
      '--pidfile',
      join(data, 'dockerd.pid'),
      '-H',
      node.dockerHost,
      '--log-level',
      'warn',
    ]),
    node.logs.dockerd,
  );
  record(dockerd);
  node.daemons.dockerd = dockerd;
  const env = { ...process.env, DOCKER_HOST: node.dockerHost };
  await waitUntil(
    `node ${spec.rank}'s dockerd`,
    () => alive(dockerd, 'dockerd') && quiet(['docker', 'version', '--format', '{{.Server.Version}}'], env),
    60_000,
    node.logs.dockerd,
  );
  await waitUntil(
    `node ${spec.rank}'s sshd`,
    () => alive(sshd, 'sshd') && listening(node.holder),
    20_000,
    node.logs.sshd,
  );
  return node as BedNode;
}

/** True while the daemon runs; throws once it has exited (no point in waiting further). */
function alive(pid: number, what: string): boolean {
  if (ended(pid)) throw new Error(`bed: ${what} (pid ${pid}) exited at start`);
  return true;
}

function quiet(argv: string[], env: NodeJS.ProcessEnv): boolean {
  try {
    run(argv, { env, timeoutMs: 10_000 });
    return true;
  } catch {
    return false;
  }
}

/** Something listens on port 22 in the node (/proc/net/tcp of a process in its namespace). */
function listening(holder: number): boolean {
  try {
    return run(['cat', `/proc/${holder}/net/tcp`])
      .split('\n')
      .some((l) => / [0-9A-F]{8}:0016 [0-9A-F]{8}:0000 0A /.test(l));
  } catch {
    return false;
  }
}

/** The sshd configuration of one node: its own host key, the run's key, DOCKER_HOST in sessions. */
export function writeSshdConfig(
  file: string,
  o: { addr: string; hostKey: string; authorizedKeys: string; dockerHost: string },
): void {
  writeFileSync(
    file,
    [
      `ListenAddress ${o.addr}:22`,
      `HostKey ${o.hostKey}`,
      `AuthorizedKeysFile ${o.authorizedKeys}`,
      'PidFile none',
      'PermitRootLogin prohibit-password',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'UsePAM no',
      // The run's key lives in a temp dir whose parents sshd would otherwise audit.
      'StrictModes no',
      'PrintMotd no',
      'LogLevel ERROR',
      // docker over ssh on this node reaches this node's daemon.
      `SetEnv DOCKER_HOST=${o.dockerHost}`,
      '',
    ].join('\n'),
  );
}

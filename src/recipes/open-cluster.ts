// The one place a cluster named by `--cluster` is opened: a spark cluster file (TOML), a
// sparkrun cluster file (YAML, by path or by name under ~/.config/sparkrun/clusters/), or,
// with no --cluster, sparkrun's default cluster. A sparkrun cluster becomes the same typed
// Cluster a TOML file gives, its fabric addresses asked of the nodes (sparkrun/fabric.ts)
// unless the caller checks this node only.
import { homedir } from 'node:os';
import { toolsFromEnv } from '../remote/ssh.js';
import { DEFAULT_DIST_PORT, parseCluster, type Cluster, type ClusterNode, type LoadedCluster } from './cluster.js';
import { fileFormat } from './format.js';
import { locator } from './located.js';
import { clusterFileOf, defaultClusterFile, parseSparkrunCluster, readSparkrunSettings } from './sparkrun/cluster.js';
import { probeFabric } from './sparkrun/fabric.js';
import { readTextFile } from './toml-file.js';
import type { TomlPosition } from './toml-positions.js';

export interface ClusterOpenOptions {
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** sysfs root on the nodes, for the fabric probe. */
  sysfs?: string;
  /**
   * Ask a sparkrun cluster's nodes for their fabric addresses (default true). Without, its
   * nodes have none (preflight --local, which checks this node only).
   */
  askNodes?: boolean;
}

function homeOf(env: NodeJS.ProcessEnv): string {
  return env.HOME ?? homedir();
}

/** `--cluster` as given, or sparkrun's default cluster's file when none was given (else undefined). */
export async function clusterSpec(spec: string | undefined, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  return spec ?? (await defaultClusterFile(homeOf(env)));
}

export async function openCluster(spec: string, o: ClusterOpenOptions): Promise<LoadedCluster> {
  const home = homeOf(o.env);
  const file = clusterFileOf(spec, home, o.cwd);
  const source = await readTextFile(file, 'cluster file');
  if (fileFormat(source, file) === 'toml') return parseCluster(source, file);
  const settings = await readSparkrunSettings(home);
  const sc = parseSparkrunCluster(source, file, settings.sshUser);
  const fabric =
    o.askNodes === false
      ? undefined
      : await probeFabric(sc, {
          tools: toolsFromEnv(o.env),
          env: o.env,
          ...(o.sysfs !== undefined ? { sysfs: o.sysfs } : {}),
        });
  const at = (line: number | undefined): TomlPosition => ({ line: line ?? 0, keys: new Map(), items: [] });
  const nodes = sc.hosts.map((h, rank): ClusterNode => ({
    rank,
    host: h.host,
    ...(fabric ? { fabricAddr: fabric[rank]!.addr, fabricPrefix: fabric[rank]!.prefix } : {}),
    env: {},
    ...(h.line !== undefined ? { line: h.line } : {}),
    locate: locator<ClusterNode, 'host' | 'fabricAddr'>(
      { host: 'host', fabricAddr: 'fabric_addr' },
      {
        ...at(h.line),
        keys: new Map([
          ['host', at(h.line)],
          ['fabric_addr', at(h.line)],
        ]),
      },
    ),
  }));
  const root = at(0);
  for (const [key, name] of [
    ['name', 'name'],
    ['nodes', 'hosts'],
  ] as const) {
    const line = sc.line(name);
    if (line !== undefined) root.keys.set(key, at(line));
  }
  const cluster: Cluster = {
    file,
    name: sc.name,
    nodes,
    head: 0,
    hfCache: settings.hfCacheDir,
    distPort: DEFAULT_DIST_PORT,
    nccl: {},
    locate: locator<Cluster, 'name' | 'nodes'>({ name: 'name', nodes: 'nodes' }, root),
  };
  return { cluster, diagnostics: sc.diagnostics };
}

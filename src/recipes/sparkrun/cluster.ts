// sparkrun cluster files (~/.config/sparkrun/clusters/NAME.yaml: name, hosts with the head
// first, user, transfer_interface, topology, …) and how `--cluster` finds them: a path to a
// file (spark TOML or sparkrun YAML), else a sparkrun cluster's name, else, with no --cluster,
// the default named in clusters/.default. sparkrun stores no fabric addresses; fabric.ts asks
// each node for its own.
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { SparkError } from '../../errors/errors.js';
import { readSmallText } from '../../files/small-file.js';
import { isTable, typeName, type FileDiagnostic } from '../fields.js';
import { sshHostProblem, sshUserProblem, withUser } from '../ssh-target.js';
import { parseYamlDocument } from './yaml-document.js';

/** Where sparkrun keeps its cluster files. */
export function sparkrunClusterDir(home: string): string {
  return join(home, '.config', 'sparkrun', 'clusters');
}

/** The default cluster's file, when clusters/.default names one that exists. */
export async function defaultClusterFile(home: string): Promise<string | undefined> {
  const marker = join(sparkrunClusterDir(home), '.default');
  if (!existsSync(marker)) return undefined;
  const name = (await readSmallText(marker, { what: 'sparkrun default cluster marker' })).trim();
  if (name === '') return undefined;
  return namedClusterFile(name, home) ?? missingNamed(name, home, marker);
}

function namedClusterFile(name: string, home: string): string | undefined {
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(name)) return undefined;
  return ['.yaml', '.yml'].map((ext) => join(sparkrunClusterDir(home), `${name}${ext}`)).find((p) => existsSync(p));
}

function missingNamed(name: string, home: string, from?: string): never {
  const dir = sparkrunClusterDir(home);
  throw new SparkError(
    'E_CLUSTER',
    `${from ? `${from} names the cluster "${name}", but` : `--cluster ${name}: no such file, and`} there is no sparkrun cluster ${join(dir, `${name}.yaml`)}; ` +
      'give the path of a cluster file, or the name of a file in that directory',
    { path: join(dir, `${name}.yaml`) },
  );
}

/** `--cluster SPEC`: an existing file as given, else a sparkrun cluster's name. */
export function clusterFileOf(spec: string, home: string, cwd: string): string {
  // A path (it exists, names a directory or has a file's extension) is read as one, and its
  // errors are a file's; a bare word is a sparkrun cluster's name.
  if (existsSync(resolve(cwd, spec)) || spec.includes('/') || /\.(toml|ya?ml)$/i.test(spec)) return spec;
  return namedClusterFile(spec, home) ?? missingNamed(spec, home);
}

export type TransferInterface = 'cx7' | 'mgmt';

/** A sparkrun cluster as its file writes it (no fabric addresses). */
export interface SparkrunCluster {
  file: string;
  name: string;
  /** ssh targets in rank order (the head first), with the cluster's user when it has one. */
  hosts: { host: string; line?: number }[];
  transferInterface: TransferInterface;
  topology?: string;
  diagnostics: FileDiagnostic[];
  line(key: string): number | undefined;
}

const KNOWN = [
  'name',
  'description',
  'hosts',
  'user',
  'cache_dir',
  'transfer_mode',
  'transfer_interface',
  'topology',
  'env',
  'env_file',
  'runtime_cache',
];

/**
 * The user of every host that names none: the cluster's `user`, else config.yaml's ssh.user.
 * An empty or null `user` is no user (sparkrun's reading); anything else must be a user name.
 */
function clusterUser(
  value: unknown,
  sshUser: string | undefined,
  refuse: (message: string) => never,
): string | undefined {
  if (value === undefined || value === null || value === '') return sshUser;
  const bad = typeof value === 'string' ? sshUserProblem(value) : `must be a user name, got ${typeName(value)}`;
  if (bad) refuse(`${JSON.stringify(value)} ${bad}`);
  return value as string;
}

export function parseSparkrunCluster(source: string, file: string, sshUser?: string): SparkrunCluster {
  const doc = parseYamlDocument(source, file, 'E_CLUSTER');
  const fail = (key: string, message: string, fix: string, line = doc.root.keys.get(key)?.line): never => {
    throw new SparkError('E_CLUSTER', `${line === undefined ? file : `${file}:${line}`}: ${message}; ${fix}`, {
      path: file,
      key,
    });
  };
  if (!isTable(doc.value))
    fail(
      'hosts',
      `a sparkrun cluster is a YAML map (name:, hosts:, …), got ${typeName(doc.value)}`,
      'write one key per line',
    );
  const top = doc.value as Record<string, unknown>;
  const hostsValue = top.hosts;
  if (!Array.isArray(hostsValue) || hostsValue.length === 0)
    fail('hosts', 'hosts must be a list of the nodes, the head first', 'write hosts: then one "- host" per line');
  const user = clusterUser(top.user, sshUser, (message) =>
    fail('user', `user ${message}`, 'write the user ssh logs in as, e.g. user: kilork'),
  );
  const hosts = (hostsValue as unknown[]).map((h, i) => {
    const line = doc.root.keys.get('hosts')?.items[i]?.line;
    const bad = typeof h === 'string' ? sshHostProblem(h.trim()) : `must be a host name or address, got ${typeName(h)}`;
    if (bad)
      fail(
        'hosts',
        `hosts[${i}] ${JSON.stringify(h)} ${bad}`,
        'write the ssh target of the node, e.g. spark1 or user@10.0.0.1',
        line,
      );
    return { host: withUser((h as string).trim(), user), ...(line !== undefined ? { line } : {}) };
  });
  const ti = top.transfer_interface ?? 'cx7';
  if (ti !== 'cx7' && ti !== 'mgmt')
    fail(
      'transfer_interface',
      `transfer_interface must be cx7 or mgmt, got ${JSON.stringify(ti)}`,
      'write transfer_interface: cx7',
    );
  const fileName = file.replace(/^.*\//, '').replace(/\.ya?ml$/, '');
  const diagnostics = clusterFindings(top, file, (key) => doc.root.keys.get(key)?.line);
  const out: SparkrunCluster = {
    file,
    name: typeof top.name === 'string' && top.name !== '' ? top.name : fileName,
    hosts,
    transferInterface: ti as TransferInterface,
    diagnostics,
    line: (key) => doc.root.keys.get(key)?.line,
  };
  if (typeof top.topology === 'string') out.topology = top.topology;
  return out;
}

/** A warning per key spark does not know, and per sparkrun setting it does not read. */
function clusterFindings(
  top: Record<string, unknown>,
  file: string,
  lineOf: (key: string) => number | undefined,
): FileDiagnostic[] {
  const diagnostics: FileDiagnostic[] = [];
  for (const key of Object.keys(top)) {
    if (KNOWN.includes(key)) continue;
    diagnostics.push({
      kind: 'unknown-key',
      severity: 'warn',
      file,
      ...(lineOf(key) !== undefined ? { line: lineOf(key)! } : {}),
      key,
      message: `unknown key ${key} in the sparkrun cluster file (ignored)`,
      fix: `spark reads ${KNOWN.join(', ')}`,
    });
  }
  for (const key of ['env', 'env_file', 'runtime_cache']) {
    if (top[key] === undefined) continue;
    const line = lineOf(key);
    diagnostics.push({
      kind: 'sparkrun-not-run',
      severity: 'warn',
      file,
      ...(line !== undefined ? { line } : {}),
      key,
      message: `${key}: spark does not read a sparkrun cluster's ${key}`,
      fix:
        key === 'runtime_cache'
          ? 'set runtime_cache in the recipe'
          : "put the values in the recipe's env, or in a spark cluster file's [nccl] or [nodes.env]",
    });
  }
  return diagnostics;
}

/** sparkrun's settings (config.yaml) spark uses: the ssh user and the Hugging Face cache. */
export interface SparkrunSettings {
  sshUser?: string;
  hfCacheDir: string;
}

export async function readSparkrunSettings(home: string): Promise<SparkrunSettings> {
  const file = join(home, '.config', 'sparkrun', 'config.yaml');
  const settings: SparkrunSettings = { hfCacheDir: '~/.cache/huggingface' };
  if (!existsSync(file)) return settings;
  const doc = parseYamlDocument(await readSmallText(file, { what: 'sparkrun settings file' }), file, 'E_CLUSTER');
  const top = isTable(doc.value) ? doc.value : {};
  const ssh = isTable(top.ssh) ? top.ssh : {};
  const user = clusterUser(ssh.user, undefined, (message) => {
    const line = doc.root.keys.get('ssh')?.keys.get('user')?.line;
    throw new SparkError(
      'E_CLUSTER',
      `${line === undefined ? file : `${file}:${line}`}: ssh.user ${message}; write the user ssh logs in as, e.g. user: kilork under ssh:`,
      { path: file, key: 'ssh.user' },
    );
  });
  if (user !== undefined) settings.sshUser = user;
  if (typeof top.hf_cache_dir === 'string' && top.hf_cache_dir !== '') settings.hfCacheDir = top.hf_cache_dir;
  return settings;
}

// The RoCE GID index NCCL picks when NCCL_IB_GID_INDEX is unset (NCCL >= 2.21.5), read from
// sysfs: /sys/class/infiniband/<hca>/ports/<p>/gids/<i> and gid_attrs/{types,ndevs}/<i>.
// Rule: skip all-zero and fe80::/64 entries; keep the wanted family (NCCL_IB_ADDR_FAMILY,
// AF_INET: IPv4-mapped GIDs), the wanted RoCE version (NCCL_IB_ROCE_VERSION_NUM, 2) and the
// range (NCCL_IB_ADDR_RANGE); the lowest such index wins. One value (B12X_ROCE_GID_INDEX)
// serves every HCA of a node, so HCAs that disagree are a failure too.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { SparkError } from '../errors/errors.js';
import { readSmallTextSync, SIZE_CAPS } from '../files/small-file.js';
import { formatHcaItem, hcaListMatches, parseHcaList, unmatchedItems } from './hca-list.js';
import {
  gidAddress,
  gidFamily,
  gidInRange,
  isLinkLocalGid,
  isZeroGid,
  parseCidr,
  parseIpv6,
  type AddrFamily,
  type Cidr,
} from './ip.js';

export interface GidPolicy {
  family: AddrFamily;
  roceVersion: number;
  range?: Cidr;
  /** Settings NCCL would ignore or reinterpret, said out loud. */
  warnings: string[];
}

export interface GidPolicyOverrides {
  family?: string;
  roceVersion?: string;
  addrRange?: string;
}

/** The selection policy from NCCL's variables (flags win), parsed the way NCCL parses them. */
export function gidPolicy(env: NodeJS.ProcessEnv, overrides: GidPolicyOverrides = {}): GidPolicy {
  const warnings: string[] = [];
  let family: AddrFamily = 'AF_INET';
  // NCCL compares the variable with exact strings; the flag also takes inet / inet6.
  const famText = overrides.family ?? env.NCCL_IB_ADDR_FAMILY ?? '';
  const fam = overrides.family !== undefined ? famText.toUpperCase().replace(/^(INET6?)$/, 'AF_$1') : famText;
  if (fam === 'AF_INET6') family = 'AF_INET6';
  else if (fam !== '' && fam !== 'AF_INET') {
    if (overrides.family !== undefined)
      throw new SparkError('E_USAGE', `--family must be AF_INET or AF_INET6, got '${famText}'`);
    warnings.push(`NCCL_IB_ADDR_FAMILY='${famText}' is neither AF_INET nor AF_INET6; NCCL uses AF_INET`);
  }
  let roceVersion = 2;
  const verText = (overrides.roceVersion ?? env.NCCL_IB_ROCE_VERSION_NUM ?? '').trim();
  if (overrides.roceVersion !== undefined && !/^[12]$/.test(verText)) {
    // Only the flag is refused: the variable is NCCL's, and what NCCL does with it is reported.
    throw new SparkError('E_USAGE', `--roce-version must be 1 or 2, got '${overrides.roceVersion}'`);
  }
  if (verText !== '') {
    if (/^\d+$/.test(verText)) roceVersion = Number(verText);
    else if (overrides.roceVersion !== undefined)
      throw new SparkError('E_USAGE', `--roce-version must be 1 or 2, got '${verText}'`);
    else warnings.push(`NCCL_IB_ROCE_VERSION_NUM='${verText}' is not a number; NCCL uses 2`);
  }
  let range: Cidr | undefined;
  const rangeText = overrides.addrRange ?? env.NCCL_IB_ADDR_RANGE ?? '';
  if (rangeText !== '') {
    const parsed = parseCidr(rangeText);
    if (parsed && parsed.family === family) range = parsed;
    else if (overrides.addrRange !== undefined) {
      throw new SparkError(
        'E_USAGE',
        `--addr-range must be an ${family === 'AF_INET' ? 'IPv4' : 'IPv6'} CIDR like 192.168.200.0/24, got '${rangeText}'`,
      );
    } else {
      warnings.push(`NCCL_IB_ADDR_RANGE='${rangeText}' is not a valid ${family} CIDR; NCCL ignores it`);
    }
  }
  return range ? { family, roceVersion, range, warnings } : { family, roceVersion, warnings };
}

export interface GidEntry {
  index: number;
  gid: string;
  address: string;
  family: AddrFamily;
  /** The gid_attrs/types text ("IB/RoCE v1", "RoCE v2"); absent when unreadable. */
  type?: string;
  version?: number;
  ndev?: string;
  usable: boolean;
  /** Why the entry is not usable. */
  reason?: string;
}

export interface PortGids {
  hca: string;
  port: number;
  linkLayer?: string;
  state?: string;
  /** The lowest usable index, or null. */
  index: number | null;
  entry?: GidEntry;
  /** Every configured (non-zero) entry, usable or not. */
  candidates: GidEntry[];
  problem?: string;
}

export interface GidReport {
  ok: boolean;
  /** The one index valid for every HCA, or null. */
  index: number | null;
  family: AddrFamily;
  roceVersion: number;
  addrRange: string | null;
  hcas: PortGids[];
  /** Indexes usable on every HCA port (a value that could be pinned). */
  commonIndexes: number[];
  problems: string[];
  warnings: string[];
}

export interface GidScanOptions {
  /** The sysfs mount (default /sys). */
  sysfs?: string;
  /** NCCL_IB_HCA syntax; empty or undefined: every device. */
  hcas?: string;
  /** Only this port of each device. */
  port?: number;
  policy: GidPolicy;
  /** Check this pinned index instead of choosing one: it must be usable on every port. */
  checkIndex?: number;
}

function readText(path: string): string | undefined {
  try {
    return readSmallTextSync(path, { what: 'sysfs attribute', maxBytes: SIZE_CAPS.sysfs }).trim();
  } catch (err) {
    // A FIFO or device under --sysfs is a bad sysfs tree, said so; unpopulated entries fail
    // to read (EINVAL) on real sysfs and are simply absent.
    if (err instanceof SparkError) throw err;
    return undefined;
  }
}

function listNumeric(dir: string): number[] {
  try {
    return readdirSync(dir)
      .filter((n) => /^\d+$/.test(n))
      .map(Number)
      .sort((a, b) => a - b);
  } catch {
    return [];
  }
}

function versionOf(type: string | undefined): number | undefined {
  if (type === undefined) return undefined;
  if (type.startsWith('IB/RoCE v1')) return 1;
  if (type.startsWith('RoCE v2')) return 2;
  return undefined;
}

function judge(entry: Omit<GidEntry, 'usable' | 'reason'>, raw: Uint8Array, policy: GidPolicy): GidEntry {
  const no = (reason: string): GidEntry => ({ ...entry, usable: false, reason });
  if (isLinkLocalGid(raw)) return no('link-local (fe80::/64)');
  if (entry.family !== policy.family)
    return no(`${entry.family === 'AF_INET' ? 'IPv4' : 'IPv6'}, wanted ${policy.family}`);
  if (entry.version === undefined)
    return no(entry.type === undefined ? 'type unreadable' : `unknown type '${entry.type}'`);
  if (entry.version !== policy.roceVersion) return no(`RoCE v${entry.version}, wanted v${policy.roceVersion}`);
  if (policy.range && !gidInRange(raw, policy.range)) return no(`outside ${policy.range.text}`);
  return { ...entry, usable: true };
}

/** Every configured GID of one port, judged against the policy. */
export function readPortGids(sysfs: string, hca: string, port: number, policy: GidPolicy): GidEntry[] {
  const portDir = join(sysfs, 'class', 'infiniband', hca, 'ports', String(port));
  const out: GidEntry[] = [];
  for (const index of listNumeric(join(portDir, 'gids'))) {
    const text = readText(join(portDir, 'gids', String(index)));
    const raw = text === undefined ? undefined : parseIpv6(text);
    if (!raw || isZeroGid(raw)) continue;
    const type = readText(join(portDir, 'gid_attrs', 'types', String(index)));
    const ndev = readText(join(portDir, 'gid_attrs', 'ndevs', String(index)));
    const base = {
      index,
      gid: text!,
      address: gidAddress(raw),
      family: gidFamily(raw),
      ...(type !== undefined && type !== '' ? { type } : {}),
      ...(versionOf(type) !== undefined ? { version: versionOf(type)! } : {}),
      ...(ndev !== undefined && ndev !== '' ? { ndev } : {}),
    };
    out.push(judge(base, raw, policy));
  }
  return out;
}

export function describeEntry(e: GidEntry): string {
  const bits = [e.address, e.type ?? 'type unreadable', ...(e.ndev ? [e.ndev] : [])];
  return `${e.index} ${bits.join(' ')}${e.usable ? '' : ` (${e.reason})`}`;
}

function wanted(policy: GidPolicy): string {
  const fam = policy.family === 'AF_INET' ? 'IPv4' : 'IPv6';
  return `${fam} RoCE v${policy.roceVersion}${policy.range ? ` in ${policy.range.text}` : ''}`;
}

function listCandidates(c: GidEntry[]): string {
  return c.length === 0 ? 'no configured entries' : `candidates: ${c.map(describeEntry).join('; ')}`;
}

/** One HCA port's GID entries, the index it would use, and why it cannot serve when it cannot. */
function portGids(options: GidScanOptions, classDir: string, hca: string, port: number): PortGids {
  const sysfs = options.sysfs ?? '/sys';
  const policy = options.policy;
  const portDir = join(classDir, hca, 'ports', String(port));
  const linkLayer = readText(join(portDir, 'link_layer'));
  const state = readText(join(portDir, 'state'));
  const candidates = readPortGids(sysfs, hca, port, policy);
  const chosen =
    options.checkIndex === undefined
      ? candidates.find((c) => c.usable)
      : candidates.find((c) => c.index === options.checkIndex && c.usable);
  const result: PortGids = {
    hca,
    port,
    ...(linkLayer !== undefined ? { linkLayer } : {}),
    ...(state !== undefined ? { state } : {}),
    index: chosen ? chosen.index : null,
    ...(chosen ? { entry: chosen } : {}),
    candidates,
  };
  const name = `${hca} port ${port}`;
  if (linkLayer !== undefined && linkLayer !== 'Ethernet') {
    result.problem = `${name}: link layer is ${linkLayer}, not RoCE (Ethernet)`;
  } else if (state !== undefined && !/ACTIVE/.test(state)) {
    result.problem = `${name}: port state is '${state}', not ACTIVE (NCCL skips it; check the cable and 'ip link')`;
  } else if (!chosen && options.checkIndex !== undefined) {
    const entry = candidates.find((c) => c.index === options.checkIndex);
    const why = entry ? entry.reason : 'not configured';
    result.problem = `${name}: pinned GID index ${options.checkIndex} is not usable (${why}); ${listCandidates(candidates)}`;
  } else if (!chosen) {
    result.problem = `${name}: no ${wanted(policy)} GID entry; ${listCandidates(candidates)}`;
  }
  return result;
}

/** Scans the selected HCA ports and decides the one GID index for the node. */
export function scanGids(options: GidScanOptions): GidReport {
  const sysfs = options.sysfs ?? '/sys';
  const policy = options.policy;
  const classDir = join(sysfs, 'class', 'infiniband');
  let devices: string[];
  try {
    if (!statSync(classDir).isDirectory()) throw new Error('not a directory');
    devices = readdirSync(classDir).sort();
  } catch {
    throw new SparkError(
      'E_SYSFS',
      `${classDir} does not exist: no RDMA devices visible (load the mlx5_ib driver, or run the container with /sys mounted and --device /dev/infiniband)`,
      { path: classDir },
    );
  }
  const list = parseHcaList(options.hcas ?? '');
  const present = devices.flatMap((hca) => listNumeric(join(classDir, hca, 'ports')).map((port) => ({ hca, port })));
  const selected = present.filter(
    (p) => hcaListMatches(list, p.hca, p.port) && (options.port === undefined || options.port === p.port),
  );
  const problems: string[] = [];
  for (const item of unmatchedItems(list, present)) {
    problems.push(
      `HCA '${formatHcaItem(item)}' not found (present: ${present.map((p) => `${p.hca}:${p.port}`).join(', ') || 'none'})`,
    );
  }
  if (selected.length === 0 && problems.length === 0) {
    problems.push(
      `no HCA port matches '${list.text || '(all)'}'${options.port !== undefined ? ` on port ${options.port}` : ''} (present: ${present.map((p) => `${p.hca}:${p.port}`).join(', ') || 'none'})`,
    );
  }
  const hcas: PortGids[] = selected.map(({ hca, port }) => {
    const result = portGids(options, classDir, hca, port);
    if (result.problem) problems.push(result.problem);
    return result;
  });
  const usableSets = hcas.map((h) => new Set(h.candidates.filter((c) => c.usable).map((c) => c.index)));
  const commonIndexes =
    usableSets.length === 0
      ? []
      : [...usableSets[0]!].filter((i) => usableSets.every((s) => s.has(i))).sort((a, b) => a - b);
  const indexes = [...new Set(hcas.map((h) => h.index).filter((i): i is number => i !== null))];
  if (problems.length === 0 && indexes.length > 1) {
    const each = hcas.map((h) => `${h.hca}:${h.port} -> ${h.index}`).join(', ');
    const fix =
      commonIndexes.length > 0
        ? `index ${commonIndexes[0]} is usable on all of them: pin NCCL_IB_GID_INDEX and B12X_ROCE_GID_INDEX to it`
        : `no index is usable on all of them; ${hcas.map((h) => `${h.hca}:${h.port} ${listCandidates(h.candidates)}`).join(' | ')}`;
    problems.push(`the HCAs disagree (${each}); one GID index must be valid on every HCA of the node: ${fix}`);
  }
  const ok = problems.length === 0;
  return {
    ok,
    index: ok && indexes.length === 1 ? indexes[0]! : null,
    family: policy.family,
    roceVersion: policy.roceVersion,
    addrRange: policy.range ? policy.range.text : null,
    hcas,
    commonIndexes,
    problems,
    warnings: policy.warnings,
  };
}

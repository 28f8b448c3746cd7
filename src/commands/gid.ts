// spark gid: the RoCE GID index NCCL would pick on this node, per HCA, and whether one value
// serves them all.
import { Command } from 'commander';
import type { CliContext } from './context.js';
import { reportCheckFailure, type CommandResult, type Io } from '../terminal/io.js';
import { describeEntry, gidPolicy, scanGids, type GidReport } from '../net/gid.js';
import { fromEnv, parseCount } from './options.js';

export interface GidOptions {
  hca?: string;
  port?: string;
  sysfs?: string;
  addrRange?: string;
  family?: string;
  roceVersion?: string;
  checkIndex?: string;
  indexOnly?: boolean;
  json?: boolean;
}

/** The HCA list: the flag, else NCCL_IB_HCA, else B12X_ROCE_HCA, else every device. */
export function hcaListFrom(flag: string | undefined, env: NodeJS.ProcessEnv, order: string[]): string | undefined {
  if (flag !== undefined) return flag;
  for (const variable of order) {
    const v = fromEnv(undefined, env, variable);
    if (v !== undefined) return v;
  }
  return undefined;
}

export function formatGidReport(report: GidReport): string {
  const lines: string[] = [];
  for (const h of report.hcas) {
    if (h.entry)
      lines.push(`${h.hca} port ${h.port}: GID index ${h.index} (${describeEntry(h.entry).replace(/^\d+ /, '')})`);
  }
  for (const w of report.warnings) lines.push(`warning: ${w}`);
  for (const p of report.problems) lines.push(`error: ${p}`);
  if (report.ok) lines.push(`GID index ${report.index} on every HCA`);
  return lines.join('\n');
}

export function runGid(options: GidOptions, io: Io): CommandResult {
  const policy = gidPolicy(io.env, {
    ...(options.addrRange !== undefined ? { addrRange: options.addrRange } : {}),
    ...(options.family !== undefined ? { family: options.family } : {}),
    ...(options.roceVersion !== undefined ? { roceVersion: options.roceVersion } : {}),
  });
  const hcas = hcaListFrom(options.hca, io.env, ['NCCL_IB_HCA', 'B12X_ROCE_HCA']);
  const report = scanGids({
    sysfs: options.sysfs ?? '/sys',
    policy,
    ...(hcas !== undefined ? { hcas } : {}),
    ...(options.port !== undefined ? { port: parseCount(options.port, '--port', 1, 255) } : {}),
    ...(options.checkIndex !== undefined
      ? { checkIndex: parseCount(options.checkIndex, '--check-index', 0, 65535) }
      : {}),
  });
  if (options.indexOnly && report.ok) return { json: report, text: String(report.index), exitCode: 0 };
  // The reason goes to stderr as well (one line), so a script that only reads stdout still sees why.
  if (!report.ok) reportCheckFailure(io, Boolean(options.json), 'gid', report.problems.join('; '));
  return { json: report, text: options.indexOnly ? '' : formatGidReport(report), exitCode: report.ok ? 0 : 1 };
}

export function gidCommand(ctx: CliContext): Command {
  return new Command('gid')
    .description(
      'the RoCE GID index NCCL would pick per HCA when NCCL_IB_GID_INDEX is unset (exit 1 if none, or if the HCAs disagree)',
    )
    .option(
      '--hca <list>',
      'HCAs in NCCL_IB_HCA syntax (^ exclude, = exact, name:port); default NCCL_IB_HCA, then B12X_ROCE_HCA, then all',
    )
    .option('--port <p>', 'only this port of each HCA')
    .option('--sysfs <root>', 'sysfs mount to read', '/sys')
    .option('--addr-range <cidr>', 'only GIDs in this range (default NCCL_IB_ADDR_RANGE)')
    .option('--family <af>', 'AF_INET or AF_INET6 (default NCCL_IB_ADDR_FAMILY, else AF_INET)')
    .option('--roce-version <n>', '1 or 2 (default NCCL_IB_ROCE_VERSION_NUM, else 2)')
    .option('--check-index <i>', 'check a pinned index instead: exit 1 unless it is usable on every HCA')
    .option('--index-only', 'print only the index (an empty line and exit 1 when there is none)')
    .option('--json', 'one JSON document on stdout')
    .addHelpText(
      'after',
      `
Reads /sys/class/infiniband/<hca>/ports/<p>/gids and gid_attrs. NCCL's rule: skip zero and fe80
entries, keep IPv4-mapped RoCE v2 entries in NCCL_IB_ADDR_RANGE, take the lowest index.

Example:
  spark gid --hca rocep1s0f0,roceP2p1s0f0 --addr-range 192.168.200.0/24
  index=$(spark gid --index-only) && export B12X_ROCE_GID_INDEX=$index`,
    )
    .action((opts: GidOptions) => {
      ctx.emit(runGid(opts, ctx.io), Boolean(opts.json));
    });
}

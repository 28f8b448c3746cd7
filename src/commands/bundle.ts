// `spark bundle`: one file that installs spark on a Linux node with only Node >= 20
// (docs/cluster-ops.md); `spark fanout install` puts it on every node of a cluster.
import { Command } from 'commander';
import { resolve } from 'node:path';
import type { CliContext } from './context.js';
import type { CommandResult } from '../terminal/io.js';
import { buildBundle, parseArch } from '../bundle/build.js';
import { packageRoot } from '../addon/index.js';
import { formatBytes } from '../terminal/format.js';

interface BundleFlags {
  arch?: string;
  out: string;
  commit?: string;
  json?: boolean;
}

export function runBundle(f: BundleFlags, ctx: CliContext): CommandResult {
  const r = buildBundle({
    arch: parseArch(f.arch),
    out: resolve(ctx.io.cwd, f.out),
    root: packageRoot(),
    ...(f.commit !== undefined ? { commit: f.commit } : {}),
    log: (line) => ctx.io.stderr(line + '\n'),
  });
  const m = r.manifest;
  return {
    json: r,
    text: `${r.out}: spark ${m.version} (${m.commit.slice(0, 12)}) for linux-${m.arch}, ${m.files} files, ${formatBytes(r.bytes)}, sha256 ${r.sha256}`,
    exitCode: 0,
  };
}

export function bundleCommand(ctx: CliContext): Command {
  return new Command('bundle')
    .description('one file holding spark, its dependencies, the addon and both engine libraries for one architecture')
    .requiredOption('--out <file>', 'the bundle to write (a gzip-compressed tar)')
    .option('--arch <arch>', "x64 or arm64 (default: this machine's); arm64 is cross-built on x64")
    .option('--commit <id>', "the commit to record (default: the checkout's git HEAD)")
    .option(
      '--json',
      'one JSON document: {out, bytes, sha256, seconds, manifest: {version, commit, arch, addon, libs, files}}',
    )
    .addHelpText(
      'after',
      `
The bundle holds dist/src, the production node_modules, the addon where node-gyp-build finds
it (prebuilds/linux-<arch>/node.napi.glibc.node), libengram_rows.so and librow_store.so
(build/Release) and bundle.json: version, commit, arch and every file's sha256. The addon and
the libraries are checked to be ELF files of that architecture needing glibc <= 2.35. arm64
needs the cross compiler (apt-get install g++-aarch64-linux-gnu). Exit 1 when a native file
fails that check, 3 when the cross build cannot run.

Examples:
  spark bundle --arch arm64 --out spark-arm64.tgz
  spark fanout install spark-arm64.tgz --cluster recipes/clusters/4node-switch.toml`,
    )
    .action((f: BundleFlags) => {
      ctx.emit(runBundle(f, ctx), Boolean(f.json));
    });
}

// spark's row libraries mounted over a serving stack's own (docs/engine-libs.md): on every node
// the host file behind a mount whose container path is a stack's library is a regular file, a
// shared object for the node's machine, exports exactly the ABI's symbols (the overlay's saying
// version 3), loads in the stacks' images (only the C library needed, glibc <= 2.35), and is the
// same build everywhere. Judged from the node's facts (facts/engine-lib.ts) by the one ELF
// reader and verdict (files/elf.ts, engine-lib/verdict.ts).
import { basename, dirname } from 'node:path';
import { at, missingSourceOutcome, type Bind, type Mount } from '../../recipes/index.js';
import { shJoin } from '../../remote/shell.js';
import { abiSymbols } from '../../engine-lib/engine-lib.js';
import { STACKS, stackNamed, stackOfImagePath } from '../../stacks/registry.js';
import type { ElfSummary } from '../../files/elf.js';
import { abiVerdict, loadProblems, machineProblem } from '../../engine-lib/verdict.js';
import { forNode } from '../context.js';
import { nodeLabel } from '../../preflight-api/node.js';
import { nodeBinds } from '../../preflight-api/node-paths.js';
import { defineRule, finding, whereNode } from '../../preflight-api/rule.js';
import type { EngineLibFileFact } from '../../preflight-api/node-facts.js';
import type { CheckedNode, Finding, PreflightContext, RuleOutcome } from '../../preflight-api/types.js';

/** A mount of a host file over a serving stack's row library (docs/engine-libs.md). */
export interface EngineLibMount {
  mount: Mount;
  /** The serving stack's name (stacks/registry.ts). */
  stack: string;
  /** The host file on the node. */
  host: string;
  /** The bind of the container that mounts it. */
  bind: Bind;
}

/** The recipe's mounts whose container path is a stack's row library (relative host paths, which launch refuses, left out). */
export function engineLibMounts(ctx: PreflightContext): EngineLibMount[] {
  const out: EngineLibMount[] = [];
  for (const bind of nodeBinds(ctx)) {
    const stack = stackOfImagePath(bind.target);
    if (stack !== undefined && bind.from.kind === 'extra_mount')
      out.push({ mount: bind.from.mount, stack: stack.name, host: bind.source, bind });
  }
  return out;
}

interface NodeLibrary {
  lib: EngineLibMount;
  file: EngineLibFileFact;
  machine: string;
}

/**
 * The node's library mounts with what it reported of each. A file it did not report is one
 * nobody read: enginelib.file fails it, never a pass (and the other rules pass it over).
 */
function nodeLibraries(ctx: PreflightContext): NodeLibrary[] {
  const libs = engineLibMounts(ctx);
  const fact = ctx.view?.engineLibs();
  const paths = ctx.view?.request.engineLibs ?? [];
  return libs.map((lib) => {
    const file = fact?.files[paths.indexOf(lib.host)] ?? {
      path: lib.host,
      kind: 'file' as const,
      unread: 'the node did not report it',
    };
    return { lib, file, machine: fact?.machine ?? '' };
  });
}

/** `spark engine-lib --copy` putting the built library at the mount's host path, on that node. */
function copyFix(lib: EngineLibMount): string {
  const name = stackNamed(lib.stack).libraryFile;
  const copy = (dir: string) => shJoin(['spark', 'engine-lib', '--stack', lib.stack, '--copy', dir]);
  return basename(lib.host) === name
    ? `${copy(dirname(lib.host))} on that node`
    : `${copy('DIR')} on that node and mount DIR/${name} (the host file is named ${basename(lib.host)})`;
}

/** `HOST on node N (spark1), mounted over CONTAINER,` for messages. */
function subject(ctx: PreflightContext, lib: EngineLibMount): string {
  return `${lib.host} on ${whereNode(ctx)} (mounted over ${lib.mount.container})`;
}

/** What is wrong with the library file; a missing one is what the launch's mount makes of it (--mount or -v). */
function fileProblem(f: EngineLibFileFact, machine: string, bind: Pick<Bind, 'mustExist'>): string | undefined {
  if (f.kind === 'missing')
    return f.link
      ? 'is a dangling symbolic link: docker refuses to mount it and the container does not start'
      : `does not exist: ${missingSourceOutcome(bind)}${bind.mustExist ? '' : ', and the stack fails to load its library'}`;
  if (f.kind === 'dir') return 'is a directory, not a library: the stack fails to load it';
  if (f.kind === 'other') return 'is not a regular file (a FIFO blocks the loader, a device is read as the library)';
  if (f.unread !== undefined) return `could not be read (${f.unread})`;
  if (f.elfError !== undefined)
    return f.elfError === 'not an ELF file'
      ? 'is not an ELF file (a text file or a copy that went wrong)'
      : `is no usable ELF file: ${f.elfError}`;
  return f.elf ? machineProblem(f.elf, machine) : undefined;
}

/** The ELF summary of a file that passed enginelib.file, else undefined (that rule reports it). */
function goodElf(f: EngineLibFileFact, machine: string): ElfSummary | undefined {
  // Whether the file is missing does not matter here: a missing file has no ELF.
  return fileProblem(f, machine, { mustExist: true }) === undefined ? f.elf : undefined;
}

function verdictOf(elf: ElfSummary, stackName: string) {
  const stack = stackNamed(stackName);
  const others = STACKS.filter((o) => o !== stack).map((o) => ({ stack: o, symbols: abiSymbols(o.name) }));
  return abiVerdict(elf, stack, abiSymbols(stack.name), others);
}

const abiErrors = (elf: ElfSummary, stack: string) => verdictOf(elf, stack).errors;

export const file = defineRule({
  id: 'enginelib.file',
  title: "the host file mounted over a serving stack's row library is a shared object for the node's machine",
  severity: 'error',
  scope: 'local-node',
  evidence: `Both stacks load their row library with ctypes from a fixed image path (${STACKS.map((s) => s.imagePath).join(', ')}); a missing host file stops the container (a read-only mount, --mount) or is mounted as an empty directory (a writable one, -v), a dangling link is refused by docker, and a library of another machine fails dlopen. A file preflight could not read (over 64 MiB, unreadable, or the node's answer about it cut short) or that the ELF reader refuses (more section headers, or more notes, symbols and names to walk, than any library has) is an error too, never a pass (docs/engine-libs.md).`,
  fix: 'spark engine-lib --stack STACK --copy DIR on that node (spark built there: npm install in its checkout builds for its machine)',
  check(ctx) {
    const out: Finding[] = [];
    for (const { lib, file: f, machine } of nodeLibraries(ctx)) {
      const problem = fileProblem(f, machine, lib.bind);
      if (problem === undefined) continue;
      const wrongMachine = f.elf !== undefined && f.elf.machine !== machine && f.elfError === undefined;
      out.push(
        finding(this, {
          message: `${subject(ctx, lib)} ${problem}`,
          where: at(ctx.recipe.file, lib.mount.line),
          fix: wrongMachine
            ? `rebuild spark for ${machine} on that node (npm install in its checkout), then ${copyFix(lib)}`
            : copyFix(lib),
        }),
      );
    }
    return out;
  },
});

export const abi = defineRule({
  id: 'enginelib.abi',
  title: "the library exports exactly its stack's ABI symbols (the overlay's reporting ABI version 3)",
  severity: 'error',
  also: "warn when an overlay library has the ABI's symbols but no version note (not spark's build: its version is not known without running it)",
  scope: 'local-node',
  evidence:
    "The stacks look every ABI symbol up when they load the library and fail at import when one is missing; the overlay refuses a library whose engram_rows_abi_version() is not 3. spark's build writes that number as an ELF note from the constant the function returns, so it is read here without running code of another machine (docs/engine-libs.md).",
  fix: 'spark engine-lib --stack STACK --copy DIR on that node',
  check(ctx) {
    const out: Finding[] = [];
    for (const { lib, file: f, machine } of nodeLibraries(ctx)) {
      const elf = goodElf(f, machine);
      if (!elf) continue;
      const v = verdictOf(elf, lib.stack);
      // One line a file: its errors together, else its warning.
      const [severity, problems] =
        v.errors.length > 0 ? (['error', v.errors] as const) : (['warn', v.warnings] as const);
      if (problems.length > 0)
        out.push(
          finding(this, {
            severity,
            message: `${subject(ctx, lib)} ${problems.join('; ')}`,
            where: at(ctx.recipe.file, lib.mount.line),
            fix: copyFix(lib),
          }),
        );
    }
    return out;
  },
});

export const loads = defineRule({
  id: 'enginelib.loads',
  title: "the library needs nothing the stacks' images lack (only the C library, glibc <= 2.35)",
  severity: 'error',
  scope: 'local-node',
  evidence:
    "The stacks' images carry their own C++ runtime and the oldest is Ubuntu 22.04 (glibc 2.35): a library that needs libstdc++ or a newer glibc symbol fails dlopen in some of them; spark links its C++ runtime in and checks the build (native/engine-libs/check-lib.sh, docs/engine-libs.md).",
  fix: "spark engine-lib --stack STACK --copy DIR on that node (spark's build needs only the C library)",
  check(ctx) {
    return nodeLibraries(ctx).flatMap(({ lib, file: f, machine }) => {
      const elf = goodElf(f, machine);
      const problems = elf ? loadProblems(elf) : [];
      return problems.length > 0
        ? [
            finding(this, {
              message: `${subject(ctx, lib)} ${problems.join('; ')}`,
              where: at(ctx.recipe.file, lib.mount.line),
              fix: copyFix(lib),
            }),
          ]
        : [];
    });
  },
});

/** Each node's digest of the library mounted at `container`, for the nodes that read one. */
function digests(ctx: PreflightContext, container: string): { c: CheckedNode; sha256: string; lib: EngineLibMount }[] {
  const out = [];
  for (const c of ctx.checked) {
    if (!c.view) continue;
    // The node's own context: its home places a `~` host path where its request did.
    const found = nodeLibraries(forNode(ctx, c.node, { home: c.view.facts.home, sysfs: c.sysfs, view: c.view }));
    const mine = found.find((x) => x.lib.mount.container === container);
    // Only files the node rules pass: a broken or wrong library is reported there already.
    const elf = mine && goodElf(mine.file, mine.machine);
    if (mine?.file.sha256 !== undefined && elf && abiErrors(elf, mine.lib.stack).length === 0)
      out.push({ c, sha256: mine.file.sha256, lib: mine.lib });
  }
  return out;
}

export const sameBuild = defineRule({
  id: 'enginelib.same-build',
  title: 'every node mounts the same build of the library (the same sha256)',
  severity: 'error',
  scope: 'cluster',
  evidence:
    'Each rank gathers its Engram rows with the library its node mounts; two builds may differ in their reads, cache and stats, so a run cannot be reasoned about (or benchmarked) as one, and a stale copy on one node hides there (docs/engine-libs.md: compare sha256 across nodes).',
  fix: 'spark engine-lib --stack STACK --copy DIR with the same spark on every node',
  check(ctx): RuleOutcome {
    const out: Finding[] = [];
    const containers = [...new Set(engineLibMounts(ctx).map((l) => l.mount.container))];
    for (const container of containers) {
      const got = digests(ctx, container);
      const counts = new Map<string, number>();
      for (const g of got) counts.set(g.sha256, (counts.get(g.sha256) ?? 0) + 1);
      if (counts.size < 2) continue;
      // The build most nodes have (ties: the head's) is the one the others should get.
      const head = got.find((g) => g.c.node.rank === ctx.placement?.head.rank) ?? got[0]!;
      const most = Math.max(...counts.values());
      const want = counts.get(head.sha256) === most ? head.sha256 : [...counts].find(([, n]) => n === most)![0];
      const agree = got.filter((g) => g.sha256 === want).map((g) => nodeLabel(g.c.node));
      const differ = got.filter((g) => g.sha256 !== want);
      for (const g of differ) {
        const others = differ.filter((x) => x !== g).map((x) => nodeLabel(x.c.node));
        out.push(
          finding(this, {
            message:
              `${g.lib.host} on ${nodeLabel(g.c.node)} (mounted over ${container}) is another build (sha256 ${g.sha256.slice(0, 12)}…) than on ${agree.join(', ')} (${want.slice(0, 12)}…)` +
              (others.length > 0 ? `; ${others.join(', ')} differ too` : ''),
            where: nodeLabel(g.c.node),
            node: { rank: g.c.node.rank, host: g.c.node.host },
            fix: `${copyFix(g.lib)}, with the spark the other nodes copied theirs from (spark engine-lib --stack ${g.lib.stack} --json shows its sha256)`,
          }),
        );
      }
    }
    return out;
  },
});

// The programs outside Node and the README's build tools that some tests run, and the one rule
// for when one is missing: on a developer's machine the test is skipped, its skip line naming
// the tool, what it checks and the apt line that installs it; under CI=true (CI installs every
// one: .ci/run) the test fails, so a check never goes missing where it must run. Every test
// that runs one of these asks here first (needs); README.md's set-up lists the same tools. The
// tests that mount a file system need root and ask the same way (needsRoot).
import { spawnSync } from 'node:child_process';
import type { TestContext } from 'node:test';

export interface ExternalTool {
  /** The name a reader knows it by. */
  name: string;
  /** What the tests use it for. */
  checks: string;
  /** The Debian/Ubuntu package that installs it. */
  apt: string;
  /** A command that exits 0 when the tool is there and works. */
  probe: readonly string[];
}

export const TOOLS = {
  shellcheck: {
    name: 'shellcheck',
    checks: 'lints every sh program spark ships or writes',
    apt: 'shellcheck',
    probe: ['shellcheck', '--version'],
  },
  dash: {
    name: 'dash',
    checks: 'runs the sh programs and generated scripts under the POSIX sh of Debian and Ubuntu',
    apt: 'dash',
    probe: ['/usr/bin/dash', '-c', ':'],
  },
  zsh: {
    name: 'zsh',
    checks: 'runs the commands spark prints under the login shell the docs support',
    apt: 'zsh',
    probe: ['/usr/bin/zsh', '-c', ':'],
  },
  numpy: {
    name: 'numpy (python3)',
    checks: 'runs the Python reader and the ctypes checks of the engine libraries',
    apt: 'python3-numpy',
    probe: ['python3', '-c', 'import numpy'],
  },
  binutils: {
    name: 'readelf and objcopy',
    checks: "read and edit the built libraries' ELF sections",
    apt: 'binutils',
    probe: ['objcopy', '--version'],
  },
} as const satisfies Record<string, ExternalTool>;

export type ToolName = keyof typeof TOOLS;

const found = new Map<ExternalTool, boolean>();

/** Whether the tool's probe runs and exits 0 here (asked once per process). */
export function installed(tool: ExternalTool): boolean {
  let ok = found.get(tool);
  if (ok === undefined) {
    const r = spawnSync(tool.probe[0]!, tool.probe.slice(1), { stdio: 'ignore', timeout: 30_000 });
    ok = r.status === 0;
    found.set(tool, ok);
  }
  return ok;
}

/** The one line a skip (or a CI failure) gives for a missing tool. */
export function missingLine(tool: ExternalTool): string {
  return `${tool.name} is not installed (it ${tool.checks}): sudo apt-get install -y ${tool.apt}`;
}

/**
 * For a test that runs `tools`: true when every one is installed. Otherwise, under CI=true it
 * throws (the test fails, naming the tool); elsewhere it skips the test with one line saying
 * what is missing and how to install it, and returns false, so the test returns at once:
 *   if (!needs(t, 'shellcheck')) return;
 */
export function needs(t: Pick<TestContext, 'skip'>, ...tools: (ToolName | ExternalTool)[]): boolean {
  const missing = tools.map((x) => (typeof x === 'string' ? TOOLS[x] : x)).filter((x) => !installed(x));
  if (missing.length === 0) return true;
  const line = missing.map(missingLine).join('; ');
  if (process.env.CI === 'true') throw new Error(`${line} (CI=true: CI must install it, as .ci/run does)`);
  t.skip(line);
  return false;
}

/**
 * For a test that mounts a file system (a small tmpfs to fill, a read-only mount): true as
 * root. Otherwise it fails under CI=true and skips elsewhere, as `needs` does for a tool:
 *   if (!needsRoot(t, 'mounts a 256 KiB tmpfs to fill')) return;
 */
export function needsRoot(t: Pick<TestContext, 'skip'>, what: string): boolean {
  if (process.getuid?.() === 0) return true;
  const line = `needs root (it ${what}): run the tests as root, e.g. sudo npm test`;
  if (process.env.CI === 'true') throw new Error(`${line} (CI=true: CI runs as root)`);
  t.skip(line);
  return false;
}

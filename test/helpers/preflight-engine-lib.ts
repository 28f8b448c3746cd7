// What the preflight tests of the engine libraries share (test/preflight/preflight-engine-lib.test.ts,
// and the other scenarios in test/long/preflight-engine-lib-scenarios.test.ts): a fake cluster
// of 4 nodes whose sparklib recipe mounts each node's libengram_rows.so over the overlay's image
// path and its librow_store.so over the Mia stack's, the builds placed on every node, a run of
// the enginelib rules, and the one finding of a rule on a node.
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { runPreflight, type Finding, type PreflightReport } from '../../src/preflight/index.js';
import { packageRoot } from '../../src/addon/index.js';
import { edit, quietIo, repoFile } from './preflight.js';
import { defaultHosts, fakeCluster, type FakeCluster, type HostSpec } from './fake-cluster.js';

export const SPARKLIB = 'recipes/dsv41-flash-4x-sglang-sparklib/recipe.toml';
export const RULES = ['enginelib.file', 'enginelib.abi', 'enginelib.loads', 'enginelib.same-build'];
export const ARM64 = {
  overlay: join(packageRoot(), 'build', 'arm64', 'libengram_rows.so'),
  mia: join(packageRoot(), 'build', 'arm64', 'librow_store.so'),
};
export const THIS_MACHINE = process.arch === 'arm64' ? 'aarch64' : 'x86_64';

export interface Libs {
  c: FakeCluster;
  recipeText: string;
  /** The library directory as every node sees it, and where node `host`'s really is. */
  dir: string;
  realDir(host: string): string;
}

export async function libs(hosts: HostSpec[] = defaultHosts()): Promise<Libs> {
  const c = await fakeCluster(hosts);
  const dir = join(c.root, 'lib');
  const mia = `[[extra_mounts]]\nhost = "${dir}/librow_store.so"\ncontainer = "/opt/dsv41/adapter/librow_store.so"\nread_only = true\n\n[env]`;
  let recipeText = edit(
    repoFile(SPARKLIB),
    'host = "/var/lib/spark/lib/libengram_rows.so"',
    `host = "${dir}/libengram_rows.so"`,
  );
  recipeText = edit(edit(recipeText, /^\[env\]$/m, mia), 'port = 30000', `port = ${c.servingPort}`);
  return { c, recipeText, dir, realDir: (host) => join(c.hostRoot(host), 'lib') };
}

/** Every node given these builds of the two libraries. */
export function place(l: Libs, files: { overlay: string; mia: string }): void {
  for (const h of l.c.hosts) {
    const d = l.realDir(h.name);
    rmSync(d, { recursive: true, force: true });
    mkdirSync(d, { recursive: true });
    copyFileSync(files.overlay, join(d, 'libengram_rows.so'));
    copyFileSync(files.mia, join(d, 'librow_store.so'));
  }
}

export async function check(l: Libs, nodeTimeoutMs = 20_000): Promise<PreflightReport> {
  return runPreflight(
    {
      recipe: l.c.recipe(l.recipeText),
      cluster: l.c.clusterFile(),
      sysfs: join(l.c.root, 'sys'),
      nodeTimeoutMs,
      only: ['enginelib'],
    },
    quietIo(l.c.env()),
  );
}

export const dump = (r: PreflightReport) => JSON.stringify({ findings: r.findings, skipped: r.skipped }, null, 1);
export const kinds = (r: PreflightReport) => r.findings.map((f) => [f.rule, f.severity, f.node?.rank]);

/** The one finding of `rule` on node `rank`, matching `message`; its fix matching `fix`. */
export function on(r: PreflightReport, rule: string, rank: number, message: RegExp, fix: RegExp): Finding {
  const got = r.findings.filter((f) => f.rule === rule && f.node?.rank === rank);
  assert.equal(got.length, 1, dump(r));
  const f = got[0]!;
  assert.match(f.message, message);
  assert.match(f.message, new RegExp(` on node ${rank} \\(spark${rank + 1}\\)`));
  assert.match(f.fix, fix);
  assert.equal(f.message.split('\n').length, 1);
  return f;
}

let shared: Promise<Libs> | undefined;
/** One cluster of four default hosts, made once in a test file (each test places the builds it looks at). */
export const defaultLibs = () => (shared ??= libs());

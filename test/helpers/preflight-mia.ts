// What the preflight tests of the Mia stack's packed shards share (test/stacks/mia/preflight.test.ts,
// and the other scenarios in test/long/preflight-mia-scenarios.test.ts): a fake cluster of 4 nodes
// (one rank each, TP 4) whose Mia recipe mounts each node's own pack directory at /engram, every
// node packed for its own rank, a run of the mia rules, and the one finding of a rule on a node.
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { runPreflight, type Finding, type PreflightReport } from '../../src/preflight/index.js';
import { miaShardName } from '../../src/stacks/mia/mia-shard.js';
import { edit, MIA, quietIo, repoFile, REVISION } from './preflight.js';
import { defaultHosts, fakeCluster, type FakeCluster, type HostSpec } from './fake-cluster.js';
import { writeMiaPack } from './mia-pack.js';

export const MIA_RULES = ['mia.packs', 'mia.o-direct', 'mia.resident-scales', 'mia.identity'];

export interface Mia {
  c: FakeCluster;
  /** The snapshot's rows per layer, and its path here. */
  rows: Map<number, number>;
  snapshot: string;
  /** Node `name`'s pack directory, as the node sees it and where its files really are. */
  nodeDir: string;
  realDir(host: string): string;
  recipeText: string;
}

let shared: Promise<Mia> | undefined;

/** One cluster of four default hosts for the fixtures (each test rewrites the packs it looks at). */
export function defaultMia(): Promise<Mia> {
  shared ??= mia();
  return shared;
}

export async function mia(hosts: HostSpec[] = defaultHosts()): Promise<Mia> {
  const c = await fakeCluster(hosts);
  const snapshot = join(c.nas, 'hf', 'hub', 'models--deepseek-ai--DeepSeek-V4.1-Flash', 'snapshots', REVISION);
  const cfg = JSON.parse(readFileSync(join(snapshot, 'config.json'), 'utf8')) as {
    text_config: { engram_num_embeddings: number[] };
  };
  const rows = new Map([1, 14].map((l, i) => [l, cfg.text_config.engram_num_embeddings[i]!]));
  const nodeDir = join(c.root, 'mia');
  const recipeText = edit(
    edit(repoFile(MIA), 'host = "~/dsv41-engram"', `host = "${nodeDir}"`),
    'port = 8888',
    `port = ${c.servingPort}`,
  );
  return { c, rows, snapshot, nodeDir, realDir: (host) => join(c.hostRoot(host), 'mia'), recipeText };
}

/** Every node packed for its own rank of 4. */
export async function packAll(m: Mia): Promise<void> {
  for (const [rank, h] of m.c.hosts.entries()) {
    m.c.setODirect(h.name, true);
    rmSync(m.realDir(h.name), { recursive: true, force: true });
    await writeMiaPack(m.realDir(h.name), m.snapshot, { rank, world: 4 });
  }
}

export async function check(
  m: Mia,
  recipeText = m.recipeText,
  nodeEnv?: Record<string, Record<string, string>>,
): Promise<PreflightReport> {
  return runPreflight(
    {
      recipe: m.c.recipe(recipeText),
      cluster: m.c.clusterFile(nodeEnv ? { nodeEnv } : {}),
      sysfs: join(m.c.root, 'sys'),
      nodeTimeoutMs: 20_000,
      only: ['mia'],
    },
    quietIo(m.c.env()),
  );
}

export const dump = (r: PreflightReport) => JSON.stringify({ findings: r.findings, skipped: r.skipped }, null, 1);

/** The report's findings as [rule, severity, node rank], in report order. */
export const kinds = (r: PreflightReport) => r.findings.map((f) => [f.rule, f.severity, f.node?.rank]);

/** The one finding of `rule` on node `rank`: of `severity`, naming that node, matching `message`. */
export function on(
  r: PreflightReport,
  rule: string,
  severity: Finding['severity'],
  rank: number,
  message: RegExp,
): Finding {
  const got = r.findings.filter((f) => f.rule === rule && f.node?.rank === rank);
  assert.equal(got.length, 1, dump(r));
  const f = got[0]!;
  assert.deepEqual([f.severity, f.node], [severity, { rank, host: `spark${rank + 1}` }], dump(r));
  assert.match(f.message, message);
  assert.match(f.message, new RegExp(` on node ${rank} \\(spark${rank + 1}\\)`));
  return f;
}

export const path = (m: Mia, layer: number, rank: number, world = 4) =>
  join(m.nodeDir, miaShardName(layer, rank, world));
export const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

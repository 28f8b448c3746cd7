// Rebuilding what a node showed over ssh on this machine, so the same readers judge it: its
// sysfs dump as a small directory tree (for the HCA and GID rules), and its snapshot as sparse
// files holding the real header bytes at the real sizes (for the one snapshot reader). Names
// come from another machine: only plain names are accepted, nothing is written outside `root`.
import { closeSync, ftruncateSync, mkdirSync, openSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { toSparkError } from '../../errors.js';
import { openSnapshotFacts } from '../snapshot-reader.js';
import { revisionOf } from '../sources.js';
import type { ProbedSnapshot } from './probe-sh.js';
import type { SnapshotFact, SysfsDump } from './types.js';

const NAME = /^[A-Za-z0-9_.:@+-]+$/;
const SYSFS_PATH =
  /^class\/(net(\/[^/]+)?|infiniband(\/[^/]+\/ports\/\d+(\/(link_layer|state|gids\/\d+|gid_attrs\/(types|ndevs)\/\d+))?)?)$/;

function safeRelative(rel: string): boolean {
  return SYSFS_PATH.test(rel) && rel.split('/').every((part) => NAME.test(part) && part !== '.' && part !== '..');
}

/** Writes a sysfs dump under `root` (entries that are not sysfs paths of the expected shape are dropped). */
export function rebuildSysfs(dump: SysfsDump, root: string): string {
  mkdirSync(join(root, 'class'), { recursive: true });
  for (const dir of dump.dirs) if (safeRelative(dir)) mkdirSync(join(root, dir), { recursive: true });
  for (const [rel, value] of Object.entries(dump.files)) {
    if (!safeRelative(rel)) continue;
    mkdirSync(join(root, rel, '..'), { recursive: true });
    writeFileSync(join(root, rel), value + '\n');
  }
  return root;
}

function safeName(name: string): boolean {
  return NAME.test(name) && name !== '.' && name !== '..';
}

/**
 * Validates a probed snapshot with the reader local snapshots go through: the index and
 * config.json as the node holds them, and each shard as a sparse file of the node's size
 * whose first 8 + N bytes are the node's header. Paths in the verdict are the node's.
 */
export async function judgeProbedSnapshot(probe: ProbedSnapshot, root: string): Promise<SnapshotFact> {
  const single = probe.path.endsWith('.safetensors') && !probe.files['model.safetensors.index.json'] && probe.shards.length === 1;
  const nodeDir = single ? probe.path.slice(0, probe.path.lastIndexOf('/')) : probe.path;
  mkdirSync(root, { recursive: true });
  for (const [name, text] of Object.entries(probe.files)) if (safeName(name)) writeFileSync(join(root, name), text);
  for (const shard of probe.shards) {
    if (!safeName(shard.name)) continue;
    const fd = openSync(join(root, shard.name), 'wx');
    try {
      if (shard.headerLength >= 0) {
        const len = Buffer.alloc(8);
        len.writeBigUInt64LE(BigInt(shard.headerLength));
        writeSync(fd, len, 0, 8, 0);
        if (shard.header) writeSync(fd, shard.header, 0, shard.header.length, 8);
      }
      ftruncateSync(fd, shard.size);
    } finally {
      closeSync(fd);
    }
  }
  const local = single ? join(root, probe.shards[0]!.name) : root;
  const back = (text: string) => text.split(root).join(nodeDir);
  const fact: SnapshotFact = { candidate: probe.candidate, dir: probe.path, result: { error: { code: 'E_INTERNAL', message: 'not read' } } };
  const config = probe.files['config.json'];
  if (config !== undefined) fact.config = config;
  try {
    const facts = await openSnapshotFacts(local);
    const revision = revisionOf(nodeDir);
    fact.result = { facts: { ...facts, dir: back(facts.dir), ...(revision !== undefined ? { revision } : {}) } };
  } catch (err) {
    const e = toSparkError(err);
    const path = typeof e.details.path === 'string' ? { path: back(e.details.path) } : {};
    fact.result = { error: { code: e.code, message: back(e.message), ...path } };
  }
  return fact;
}

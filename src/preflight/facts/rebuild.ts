// Rebuilding what a node showed over ssh on this machine, so the same readers judge it: its
// sysfs dump as a small directory tree (for the HCA and GID rules), and its snapshot and its
// node-local copy as sparse files holding the real header bytes at the real sizes, beside the
// real small files (for the one snapshot reader and the copy readers). Names
// come from another machine: only plain names are accepted, nothing is written outside `root`.
import { closeSync, ftruncateSync, mkdirSync, openSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { openSnapshotFacts } from '../snapshot-reader.js';
import { revisionOfSnapshotDir } from '../../engram/hf-cache.js';
import { copyFact, errorFact } from './collect.js';
import type { ProbedDir, ProbedSnapshot } from './probe-sh.js';
import type { CopyFact, SnapshotFact, SysfsDump } from '../../preflight-api/node-facts.js';

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

/** Writes a probed directory under `root`: its small files, and each shard as a sparse file of the node's size holding the node's header. */
function rebuildDir(dump: ProbedDir, root: string): void {
  mkdirSync(root, { recursive: true });
  for (const [name, text] of Object.entries(dump.files)) if (safeName(name)) writeFileSync(join(root, name), text);
  for (const shard of dump.shards) {
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
}

/** Replaces the rebuilt directory with the node's in text this machine's readers wrote. */
function onNode(root: string, nodeDir: string): (text: string) => string {
  return (text) => text.split(root).join(nodeDir);
}

/**
 * Validates a probed snapshot with the reader local snapshots go through: the index and
 * config.json as the node holds them, and each shard as the node has it (size and header).
 * Paths in the verdict are the node's.
 */
export async function judgeProbedSnapshot(probe: ProbedSnapshot, root: string): Promise<SnapshotFact> {
  const single =
    probe.path.endsWith('.safetensors') && !probe.files['model.safetensors.index.json'] && probe.shards.length === 1;
  const nodeDir = single ? probe.path.slice(0, probe.path.lastIndexOf('/')) : probe.path;
  rebuildDir(probe, root);
  const local = single ? join(root, probe.shards[0]!.name) : root;
  const back = onNode(root, nodeDir);
  const fact: SnapshotFact = {
    candidate: probe.candidate,
    dir: probe.path,
    result: { error: { code: 'E_INTERNAL', message: 'not read' } },
  };
  const config = probe.files['config.json'];
  if (config !== undefined) fact.config = config;
  try {
    const facts = await openSnapshotFacts(local);
    const revision = revisionOfSnapshotDir(nodeDir);
    fact.result = { facts: { ...facts, dir: back(facts.dir), ...(revision !== undefined ? { revision } : {}) } };
  } catch (err) {
    const e = errorFact(err);
    fact.result = {
      error: { ...e, message: back(e.message), ...(e.path !== undefined ? { path: back(e.path) } : {}) },
    };
  }
  return fact;
}

/** Reads a probed node-local copy with the readers the wrapper uses; paths in the verdict are the node's. */
export async function judgeProbedCopy(probe: ProbedDir, root: string): Promise<CopyFact | undefined> {
  rebuildDir(probe, root);
  const back = onNode(root, probe.path);
  const fact = await copyFact(root);
  if (!fact) return undefined;
  if ('error' in fact.result) {
    const e = fact.result.error;
    return {
      dir: probe.path,
      result: { error: { ...e, message: back(e.message), ...(e.path !== undefined ? { path: back(e.path) } : {}) } },
    };
  }
  const { copy, manifestProblems } = fact.result;
  return {
    dir: probe.path,
    result: { copy: { ...copy, manifestPath: back(copy.manifestPath) }, manifestProblems: manifestProblems.map(back) },
  };
}

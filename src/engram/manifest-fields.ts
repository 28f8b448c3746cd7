// Field readers for the JSON manifests spark reads (packed and sparse): each checks one value
// and fails with one E_PACK_MANIFEST error naming the file and the key.
import { SparkError } from '../errors/errors.js';
import type { SplitRule } from '../domain/split-rule.js';
import { manifestLexiconProblem } from './manifest-lexicon.js';

/**
 * The most bytes a manifest (spark-pack.json, engram-local.json) may hold, defined with the rest
 * of the manifest grammar. Every reader refuses more (spark, its wrapper,
 * python/spark_engram_copy/checked.py: MAX_MANIFEST_BYTES), so `spark pack` refuses, before
 * copying, a chunk size whose checksums would not fit.
 */
export { MAX_MANIFEST_BYTES } from './manifest-lexicon.js';

export function bad(path: string, key: string, what: string): SparkError {
  const where = key === '' ? path : `${path}: ${key}`;
  return new SparkError('E_PACK_MANIFEST', `${where} ${what}`, { path, key });
}

/**
 * A manifest's text as a JSON object: text that is not JSON, or not an object, or outside the
 * manifest grammar (manifest-lexicon.ts), fails naming the file.
 */
export function manifestObject(path: string, text: string): Record<string, unknown> {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw bad(path, '', `is not valid JSON (${(err as Error).message}); re-run spark pack`);
  }
  const problem = manifestLexiconProblem(text);
  if (problem) throw bad(path, problem.key, `${problem.what}; re-run spark pack`);
  return obj(path, '', raw);
}

/** `format` and `version` under `prefix` ('' or 'spark.'): this spark reads its own format and version only. */
export function formatAndVersion(
  path: string,
  prefix: string,
  o: Record<string, unknown>,
  format: string,
  version: number,
): void {
  if (o.format !== format) throw bad(path, `${prefix}format`, `must be "${format}"`);
  if (o.version !== version) {
    throw bad(
      path,
      `${prefix}version`,
      `is ${JSON.stringify(o.version)}; this spark reads version ${version} (upgrade spark or re-pack)`,
    );
  }
}

export function obj(path: string, key: string, v: unknown): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw bad(path, key, 'must be a JSON object');
  return v as Record<string, unknown>;
}

export function arr(path: string, key: string, v: unknown): unknown[] {
  if (!Array.isArray(v)) throw bad(path, key, 'must be an array');
  return v;
}

export function str(path: string, key: string, v: unknown): string {
  if (typeof v !== 'string' || v === '') throw bad(path, key, 'must be a non-empty string');
  return v;
}

export function plainName(path: string, key: string, v: unknown): string {
  const s = str(path, key, v);
  if (s.includes('/') || s.includes('\\') || s.startsWith('.') || s.includes('\0')) {
    throw bad(path, key, `'${s}' must be a plain file name inside the copy's directory`);
  }
  return s;
}

export function hex8(path: string, key: string, v: unknown): string {
  if (typeof v !== 'string' || !/^[0-9a-f]{8}$/.test(v))
    throw bad(path, key, 'must be 8 lowercase hex digits (a CRC-32)');
  return v;
}

export function num(path: string, key: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isFinite(v)) throw bad(path, key, 'must be a number');
  return v;
}

export function int(path: string, key: string, v: unknown, min: number): number {
  if (typeof v === 'number' && Number.isInteger(v) && !Number.isSafeInteger(v)) {
    throw bad(path, key, `is larger than 2^53 - 1, the largest row or byte count a manifest can hold exactly`);
  }
  if (typeof v !== 'number' || !Number.isInteger(v))
    throw bad(path, key, `must be a whole number (got ${JSON.stringify(v)})`);
  if (v < min) throw bad(path, key, `must be >= ${min} (got ${v})`);
  return v;
}

/** `rank`, `world` and `split` under `prefix` ('' or 'spark.'), checked together. */
export function rankWorldSplit(
  path: string,
  prefix: string,
  o: Record<string, unknown>,
): { rank: number; world: number; split: SplitRule } {
  const world = int(path, `${prefix}world`, o.world, 1);
  const rank = int(path, `${prefix}rank`, o.rank, 0);
  if (rank >= world) throw bad(path, `${prefix}rank`, `is ${rank} but world is ${world}`);
  const split = o.split;
  if (split !== 'floor' && split !== 'front' && split !== 'heads')
    throw bad(path, `${prefix}split`, 'must be floor, front or heads');
  return { rank, world, split };
}

/**
 * A snapshot file as a manifest records it. `ino`, `ctimeMs`, `headerBytes` and `headerCrc32`
 * (the identity a pack's journal keys on: docs/packed-format.md) are absent in manifests
 * written before spark recorded them; readers then compare what is there.
 */
export interface RecordedSourceFile {
  name: string;
  bytes: number;
  mtimeMs: number;
  ino?: number;
  ctimeMs?: number;
  headerBytes?: number;
  headerCrc32?: string;
}

/** The snapshot files a manifest records under `key`. */
export function sourceFiles(path: string, key: string, v: unknown): RecordedSourceFile[] {
  return arr(path, key, v).map((f, i) => {
    const at = `${key}[${i}]`;
    const o = obj(path, at, f);
    const out: RecordedSourceFile = {
      name: str(path, `${at}.name`, o.name),
      bytes: int(path, `${at}.bytes`, o.bytes, 0),
      mtimeMs: num(path, `${at}.mtimeMs`, o.mtimeMs),
    };
    // An inode number may pass 2^53 (NFS, XFS): it is compared as stat gives it, a number.
    if (o.ino !== undefined) out.ino = num(path, `${at}.ino`, o.ino);
    if (o.ctimeMs !== undefined) out.ctimeMs = num(path, `${at}.ctimeMs`, o.ctimeMs);
    if (o.headerBytes !== undefined) out.headerBytes = int(path, `${at}.headerBytes`, o.headerBytes, 0);
    if (o.headerCrc32 !== undefined) out.headerCrc32 = hex8(path, `${at}.headerCrc32`, o.headerCrc32);
    return out;
  });
}

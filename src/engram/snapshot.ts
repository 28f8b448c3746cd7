// The snapshot model: a checkpoint directory (index + shards), a single model.safetensors, or
// one .safetensors file, validated and reduced to what the tools need: the shards, every
// tensor's place in its file, config.json, and the Engram tables.
import { lstat, realpath, stat } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join } from 'node:path';
import { SparkError } from '../errors/errors.js';
import { readHeadersSettled, type SafetensorsHeader, type SafetensorsTensor } from '../addon/safetensors.js';
import { readModelConfig, type ModelConfig } from './config.js';
import {
  engramTensorNames,
  findEngramTables,
  type EngramPatterns,
  type EngramTable,
  type TensorRef,
} from './engram-tables.js';
import { readJsonIfExists } from '../files/read-optional.js';
import { SIZE_CAPS } from '../files/small-file.js';
import { revisionOfSnapshotDir } from './hf-cache.js';

export type { EngramTable, TensorRef } from './engram-tables.js';

export interface ShardSummary {
  file: string;
  fileName: string;
  bytes: number;
  tensors: number;
}

export interface Snapshot {
  dir: string;
  kind: 'index' | 'single' | 'file';
  /** The Hugging Face revision when the directory is `.../snapshots/<40-hex>`. */
  revision?: string;
  shards: ShardSummary[];
  /** Every tensor by name (built on first use; `filter` avoids building it). */
  tensors: LazyTensorMap;
  config?: ModelConfig;
  engram: EngramTable[];
}

export interface OpenSnapshotOptions extends Partial<EngramPatterns> {
  /** Read only the index and the headers of shards that hold Engram tensors (boot path). */
  engramOnly?: boolean;
}

export const INDEX_FILE = 'model.safetensors.index.json';
const SINGLE_FILE = 'model.safetensors';

export async function openSnapshot(path: string, options: OpenSnapshotOptions = {}): Promise<Snapshot> {
  const info = await stat(path).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') {
      throw new SparkError('E_FILE_NOT_FOUND', `${path}: no such snapshot directory or file`, { path });
    }
    throw err;
  });
  if (info.isFile()) return fromFiles(dirname(path), 'file', [basename(path)], undefined, options);
  if (!info.isDirectory()) {
    throw new SparkError(
      'E_NOT_A_FILE',
      `${path}: neither a snapshot directory nor a .safetensors file (a FIFO, device or socket)`,
      { path },
    );
  }
  const dir = path;
  const indexPath = join(dir, INDEX_FILE);
  const index = await readIndex(indexPath);
  if (index) {
    const wanted = options.engramOnly ? engramShardsOf(index, options) : uniqueShards(index);
    return fromFiles(dir, 'index', wanted, index, options);
  }
  if (await exists(join(dir, SINGLE_FILE))) return fromFiles(dir, 'single', [SINGLE_FILE], undefined, options);
  throw new SparkError(
    'E_SNAPSHOT',
    `${dir}: not a snapshot: it holds neither ${INDEX_FILE} nor ${SINGLE_FILE}; point at the snapshot directory ` +
      '(for the Hugging Face cache: models--org--name/snapshots/<revision>)',
    { path: dir },
  );
}

/** weight_map: tensor name -> shard file name, validated. */
type WeightMap = Map<string, string>;

async function readIndex(indexPath: string): Promise<WeightMap | undefined> {
  const doc = await readJsonIfExists(indexPath, 'E_INDEX_JSON', { what: 'index', maxBytes: SIZE_CAPS.index });
  if (doc === undefined) return undefined;
  const weightMap = (doc as { weight_map?: unknown } | null)?.weight_map;
  if (
    typeof doc !== 'object' ||
    doc === null ||
    typeof weightMap !== 'object' ||
    weightMap === null ||
    Array.isArray(weightMap)
  ) {
    throw new SparkError('E_INDEX_JSON', `${indexPath}: expected an object with a "weight_map" object`, {
      path: indexPath,
    });
  }
  // Without this, an empty index reads as a snapshot without Engram tables, and the error
  // blames config.json for listing layers the snapshot "lacks".
  if (Object.keys(weightMap).length === 0) {
    throw new SparkError(
      'E_INDEX_JSON',
      `${indexPath}: "weight_map" is empty, so the index names no tensors; download the index again`,
      {
        path: indexPath,
      },
    );
  }
  const map: WeightMap = new Map();
  const checked = new Set<string>();
  for (const [tensor, file] of Object.entries(weightMap)) {
    if (typeof file !== 'string') {
      throw new SparkError('E_INDEX_JSON', `${indexPath}: weight_map["${tensor}"] must be a file name string`, {
        path: indexPath,
        tensor,
      });
    }
    // Thousands of tensors share a few dozen shard names: check each name once.
    if (!checked.has(file)) {
      checkShardName(indexPath, tensor, file);
      checked.add(file);
    }
    map.set(tensor, file);
  }
  return map;
}

/** A shard name must stay inside the snapshot: no '..', no absolute path, no scheme. */
function checkShardName(indexPath: string, tensor: string, file: string): void {
  const parts = file.split(/[\\/]/);
  const bad =
    file === '' ||
    file.includes('\0') ||
    isAbsolute(file) ||
    file.startsWith('\\') ||
    /^[a-zA-Z][a-zA-Z0-9+.-]*:/.test(file) ||
    parts.includes('..');
  if (bad) {
    throw new SparkError(
      'E_INDEX_PATH',
      `${indexPath}: weight_map["${tensor}"] names '${file}', which is not a file inside the snapshot ` +
        "(absolute paths, '..' and URLs are refused); fix or re-download the index",
      { path: indexPath, tensor },
    );
  }
}

function uniqueShards(index: WeightMap): string[] {
  return [...new Set(index.values())].sort();
}

function engramShardsOf(index: WeightMap, options: OpenSnapshotOptions): string[] {
  const names = [...index.keys()];
  const tables = engramTensorNames(names, options);
  const files = new Set<string>();
  for (const name of tables) files.add(index.get(name)!);
  return [...files].sort();
}

/** weight_map grouped by shard, in the order of fileNames. */
function namesPerFile(index: WeightMap, fileNames: string[]): string[][] {
  const byFile = new Map<string, string[]>(fileNames.map((f) => [f, []]));
  for (const [name, file] of index) byFile.get(file)?.push(name);
  return fileNames.map((f) => byFile.get(f)!);
}

/**
 * Every tensor by name, built on first use: a real checkpoint has tens of thousands of tensors
 * and most commands need only the Engram ones, which findEngramTables picks out by name.
 */
class LazyTensorMap {
  private map?: Map<string, TensorRef>;
  constructor(
    private readonly headers: SafetensorsHeader[],
    private readonly shards: ShardSummary[],
  ) {}

  get size(): number {
    return this.shards.reduce((a, s) => a + s.tensors, 0);
  }

  get(name: string): TensorRef | undefined {
    return this.all().get(name);
  }

  values(): IterableIterator<TensorRef> {
    return this.all().values();
  }

  /** Every tensor name, in file order. */
  names(): string[] {
    return this.headers.flatMap((h) => h.tensors.map((t) => t.name));
  }

  /** The tensors whose names pass `keep`, without building the whole map. */
  filter(keep: (name: string) => boolean): TensorRef[] {
    const out: TensorRef[] = [];
    this.headers.forEach((h, i) => {
      for (const t of h.tensors) if (keep(t.name)) out.push(this.ref(i, t));
    });
    return out;
  }

  private all(): Map<string, TensorRef> {
    if (!this.map) {
      this.map = new Map();
      this.headers.forEach((h, i) => {
        for (const t of h.tensors) this.map!.set(t.name, this.ref(i, t));
      });
    }
    return this.map;
  }

  private ref(shard: number, t: SafetensorsTensor): TensorRef {
    const { file, fileName } = this.shards[shard];
    return {
      name: t.name,
      dtype: t.dtype,
      shape: exactShape(t.shape, file, t.name),
      file,
      fileName,
      fileOffset: exactNumber(t.fileOffset, file, t.name),
      bytes: exactNumber(t.bytes, file, t.name),
    };
  }
}

/** Tensor sizes here are far below 2^53; a larger one is refused rather than rounded. */
function exactNumber(v: number | bigint, path: string, tensor: string): number {
  if (typeof v === 'number') return v;
  throw new SparkError(
    'E_SAFETENSORS_SHAPE',
    `${path}: tensor '${tensor}': dimension ${v} is past 2^53, which this tool does not handle`,
    {
      path,
      tensor,
    },
  );
}

function exactShape(shape: (number | bigint)[], path: string, tensor: string): number[] {
  for (const d of shape) if (typeof d !== 'number') exactNumber(d, path, tensor);
  return shape as number[];
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * The path of a shard the index names. Its NAME must stay inside the snapshot (checkShardName);
 * where a link then leads is the user's choice: the Hugging Face cache links into blobs/,
 * `huggingface-cli download --local-dir` trees and NFS-hosted shards link anywhere. The header
 * reader refuses what is not a regular file.
 */
async function resolveShard(dir: string, fileName: string): Promise<string> {
  const file = join(dir, fileName);
  try {
    await lstat(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new SparkError('E_SHARD_MISSING', `${file}: shard is missing; download it again (the index names it)`, {
        path: file,
      });
    }
    throw err;
  }
  await realpath(file).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT' && err.code !== 'ELOOP' && err.code !== 'ENOTDIR') throw err;
    throw new SparkError('E_SHARD_MISSING', `${file}: shard is a dangling link (or a link loop); download it again`, {
      path: file,
    });
  });
  return file;
}

/** Every shard's path; when shards are missing, one error naming all of them (not only the first). */
async function resolveShards(dir: string, fileNames: string[]): Promise<string[]> {
  const settled = await Promise.allSettled(fileNames.map((f) => resolveShard(dir, f)));
  const missing = settled.flatMap((r) =>
    r.status === 'rejected' && (r.reason as SparkError).code === 'E_SHARD_MISSING' ? [r.reason as SparkError] : [],
  );
  if (missing.length > 1) {
    const paths = missing.map((e) => String(e.details.path));
    throw new SparkError(
      'E_SHARD_MISSING',
      `${missing.length} of ${fileNames.length} shards are missing or dangling links in ${dir}: ${paths.map((p) => basename(p)).join(', ')}; download them again (the index names them)`,
      { path: dir, files: paths },
    );
  }
  const failed = settled.find((r) => r.status === 'rejected');
  if (failed) throw (failed as PromiseRejectedResult).reason;
  return settled.map((r) => (r as PromiseFulfilledResult<string>).value);
}

async function fromFiles(
  dir: string,
  kind: Snapshot['kind'],
  fileNames: string[],
  index: WeightMap | undefined,
  options: OpenSnapshotOptions,
): Promise<Snapshot> {
  const realDir = await realpath(dir);
  const files = await resolveShards(dir, fileNames);
  const expected = index ? namesPerFile(index, fileNames) : undefined;
  const [settled, config] = await Promise.all([readHeadersSettled(files, { expected }), readModelConfig(dir)]);
  const headers: SafetensorsHeader[] = [];
  for (const [i, r] of settled.entries()) {
    if (r instanceof Error) {
      throw r.code === 'E_FILE_NOT_FOUND'
        ? new SparkError('E_SHARD_MISSING', `${files[i]}: shard is missing`, { path: files[i] })
        : r;
    }
    headers.push(r);
  }

  const shards: ShardSummary[] = headers.map((h, i) => ({
    file: files[i],
    fileName: fileNames[i],
    bytes: exactNumber(h.fileSize, files[i], ''),
    tensors: h.tensors.length,
  }));
  const tensors = new LazyTensorMap(headers, shards);
  const engram = findEngramTables(tensors, config, options);
  const revision = revisionOfSnapshotDir(realDir);
  return { dir, kind, revision, shards, tensors, config, engram };
}

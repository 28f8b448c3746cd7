// The snapshot model: a checkpoint directory (index + shards), a single model.safetensors, or
// one .safetensors file, validated and reduced to what the tools need: the shards, every
// tensor's place in its file, config.json, and the Engram tables.
import { lstat, readFile, realpath, stat } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, sep } from 'node:path';
import { SparkError } from '../errors.js';
import { readHeadersSettled, type SafetensorsHeader } from '../native/safetensors.js';
import { readModelConfig, type ModelConfig } from './config.js';
import { engramTensorNames, findEngramTables, type EngramPatterns, type EngramTable, type TensorRef } from './engram-tables.js';

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
  tensors: Map<string, TensorRef>;
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
  let text: string;
  try {
    text = await readFile(indexPath, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new SparkError('E_INDEX_JSON', `${indexPath}: not valid JSON (${(err as Error).message})`, { path: indexPath });
  }
  const weightMap = (doc as { weight_map?: unknown } | null)?.weight_map;
  if (typeof doc !== 'object' || doc === null || typeof weightMap !== 'object' || weightMap === null || Array.isArray(weightMap)) {
    throw new SparkError('E_INDEX_JSON', `${indexPath}: expected an object with a "weight_map" object`, { path: indexPath });
  }
  const map: WeightMap = new Map();
  for (const [tensor, file] of Object.entries(weightMap)) {
    if (typeof file !== 'string') {
      throw new SparkError('E_INDEX_JSON', `${indexPath}: weight_map["${tensor}"] must be a file name string`, {
        path: indexPath,
        tensor,
      });
    }
    checkShardName(indexPath, tensor, file);
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

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

/** A shard must be a regular file whose real path stays inside the snapshot directory. */
async function resolveShard(dir: string, realDir: string, fileName: string): Promise<string> {
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
  const real = await realpath(file).catch(() => {
    throw new SparkError('E_SHARD_MISSING', `${file}: shard is a dangling link; download it again`, { path: file });
  });
  // The Hugging Face cache links snapshots/<rev>/x to ../../blobs/<hash>: allow the model's own
  // cache folder (the parent of snapshots/), nothing outside it.
  const allowed = basename(dirname(realDir)) === 'snapshots' ? dirname(dirname(realDir)) : realDir;
  const rel = relative(allowed, real);
  if (rel.startsWith('..') || isAbsolute(rel)) {
    throw new SparkError('E_INDEX_PATH', `${file}: links outside the snapshot (to ${real}); refusing to read it`, {
      path: file,
    });
  }
  return file;
}

async function fromFiles(
  dir: string,
  kind: Snapshot['kind'],
  fileNames: string[],
  index: WeightMap | undefined,
  options: OpenSnapshotOptions,
): Promise<Snapshot> {
  const realDir = await realpath(dir);
  const files = await Promise.all(fileNames.map((f) => resolveShard(dir, realDir, f)));
  const [settled, config] = await Promise.all([readHeadersSettled(files), readModelConfig(dir)]);
  const headers: SafetensorsHeader[] = [];
  for (const [i, r] of settled.entries()) {
    if (r instanceof Error) {
      throw r.code === 'E_FILE_NOT_FOUND' ? new SparkError('E_SHARD_MISSING', `${files[i]}: shard is missing`, { path: files[i] }) : r;
    }
    headers.push(r);
  }

  const tensors = new Map<string, TensorRef>();
  const shards: ShardSummary[] = [];
  headers.forEach((h, i) => {
    const fileName = fileNames[i];
    shards.push({ file: files[i], fileName, bytes: Number(h.fileSize), tensors: h.tensors.length });
    for (const t of h.tensors) {
      if (tensors.has(t.name)) {
        throw new SparkError('E_SAFETENSORS_DUPLICATE', `${files[i]}: tensor '${t.name}' also appears in ${tensors.get(t.name)!.fileName}`, {
          path: files[i],
          tensor: t.name,
        });
      }
      if (index && index.has(t.name) && index.get(t.name) !== fileName) {
        throw new SparkError(
          'E_INDEX_TENSOR',
          `${files[i]}: holds tensor '${t.name}', which the index places in ${index.get(t.name)}; the index and shards disagree`,
          { path: files[i], tensor: t.name },
        );
      }
      tensors.set(t.name, {
        name: t.name,
        dtype: t.dtype,
        shape: t.shape.map(Number),
        file: files[i],
        fileName,
        fileOffset: Number(t.fileOffset),
        bytes: Number(t.bytes),
      });
    }
  });
  if (index) {
    const read = new Set(fileNames);
    for (const [name, file] of index) {
      if (read.has(file) && !tensors.has(name)) {
        throw new SparkError('E_INDEX_TENSOR', `${join(dir, file)}: the index places tensor '${name}' here, but the shard does not hold it`, {
          path: join(dir, file),
          tensor: name,
        });
      }
    }
  }
  const engram = findEngramTables(tensors, config, options);
  const rev = basename(realDir);
  const revision = /^[0-9a-f]{40}$/.test(rev) && realDir.includes(`${sep}snapshots${sep}`) ? rev : undefined;
  return { dir, kind, revision, shards, tensors, config, engram };
}

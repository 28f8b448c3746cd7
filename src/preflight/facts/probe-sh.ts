// The facts of a node without spark, gathered by the self-contained POSIX sh scripts hello.sh
// and probe.sh (with its fragments node-lib.sh and reader-dir.sh) sent over ssh, and parsed here.
// Every value of arbitrary content travels hex-encoded (od), keyed by its index in the request,
// so the answer parses the same whatever the paths or files hold.
import { quoted, shTemplate } from '../../remote/sh-template.js';
import { parseAddresses, parseListeners, parseNvidiaSmi, parseRoutes } from './parse.js';
import { imageFailure } from './collect.js';
import { parseReaderDirLine, readerDirValues } from './reader-dir.js';
import { COPY_MANIFESTS } from '../../stacks/local-dir.js';
import { hexBytes } from './hex.js';
import {
  TEXT_LIMIT,
  type FactsRequest,
  type ReaderDirFact,
  type NodeFacts,
  type NodeHello,
  type PathKind,
  type SysfsDump,
} from '../../preflight-api/node-facts.js';

const HELLO = shTemplate(import.meta.url, 'hello.sh');
const PROBE = shTemplate(import.meta.url, 'probe.sh');

/** The first answer: the node's name, home, clock, kernel and spark version. */
export function helloScript(spark: string): string {
  return HELLO.fill({ SPARK: spark });
}

/** The probe for one request. Output: one record per line, `end` last. */
export function probeScript(request: FactsRequest): string {
  return PROBE.fill({
    PROC_NET: request.procNet,
    SYSFS: request.sysfs,
    DOCKER: request.docker,
    TEXT_LIMIT,
    LISTEN: request.ports.length > 0 ? 1 : 0,
    PATHS: request.paths,
    TEXTS: request.texts,
    FREE: request.free,
    IMAGES: request.images,
    // Three words a candidate, always quoted: `model` has no third (its `-` keeps the stride).
    SNAPSHOT_CANDIDATES: quoted(
      request.snapshot.flatMap((c) =>
        'dir' in c ? ['dir', c.dir, c.notCopy ? '1' : '0'] : ['model', c.modelDir, '-'],
      ),
    ),
    COPY_DIRS: request.copyDir === undefined ? [] : [request.copyDir],
    COPY_MANIFESTS: COPY_MANIFESTS.join(' '),
    ...readerDirValues(request.readerDir),
  });
}

/** Hex (od's output, spaces removed) back to bytes; throws on a field that is not hex. */
function unhex(hex: string): Buffer {
  const bytes = hexBytes(hex);
  if (!bytes) throw new Error(`bad hex field (${hex.slice(0, 20)}…)`);
  return bytes;
}

const text = (hex: string) => unhex(hex).toString('utf8');

/** Parses the hello answer; throws on anything that is not one. */
export function parseHello(out: string, sentMs: number, receivedMs: number): NodeHello {
  const lines = out.split('\n');
  const start = lines.indexOf('spark-hello 1');
  if (start < 0 || !lines.includes('end'))
    throw new Error(`not a hello answer: ${out.trim().split('\n').at(-1) ?? 'no output'}`);
  const hello: NodeHello = { hostname: '', home: '', clockMs: 0, sentMs, receivedMs };
  for (const line of lines.slice(start + 1)) {
    const [tag, value = ''] = line.split(' ');
    if (tag === 'clock') hello.clockMs = Number(value);
    else if (tag === 'home') hello.home = text(value);
    else if (tag === 'hostname') hello.hostname = text(value).trim();
    else if (tag === 'kernel') hello.kernel = text(value).trim();
    else if (tag === 'spark') hello.spark = text(value).trim();
  }
  if (!hello.home.startsWith('/')) throw new Error(`the node reported no home directory ("${hello.home}")`);
  return hello;
}

/** A directory as the probe dumped it: small files whole, shards by size and header bytes. */
export interface ProbedDir {
  path: string;
  files: Record<string, string>;
  shards: { name: string; size: number; headerLength: number; header?: Buffer }[];
}

/** The raw snapshot answer of the probe; preflight validates it like a local one (see rebuild.ts). */
export interface ProbedSnapshot extends ProbedDir {
  candidate: number;
}

export interface ProbeAnswer {
  facts: NodeFacts;
  snapshot?: ProbedSnapshot;
  copy?: ProbedDir;
}

/** Parses the probe's answer into facts (the snapshot and copy still raw). */
export function parseProbe(out: string, request: FactsRequest, hello: NodeHello): ProbeAnswer {
  const lines = out.split('\n');
  const start = lines.indexOf('spark-probe 1');
  if (start < 0 || !lines.includes('end'))
    throw new Error(`the probe did not finish: ${out.trim().split('\n').at(-1) ?? 'no output'}`);
  const facts: NodeFacts = {
    ...hello,
    via: 'probe',
    paths: request.paths.map(() => ({ kind: 'missing' as PathKind })),
    texts: request.texts.map(() => null),
    free: request.free.map(() => null),
    ports: request.ports.map(() => 'free' as const),
    images: request.images.map(() => ({ error: 'no answer' })),
    addresses: [],
    routes: [],
  };
  const sysfs: SysfsDump = { dirs: [], files: {} };
  let snapshot: ProbedSnapshot | undefined;
  let copy: ProbedDir | undefined;
  let dump: ProbedDir | undefined;
  let listeners = new Set<number>();
  let readerDir: ReaderDirFact | undefined;
  for (const line of lines.slice(start + 1)) {
    const f = line.split(' ');
    const tag = f[0];
    const i = Number(f[1]);
    if (tag === 'path' && i < facts.paths.length) {
      const kind = f[2] as PathKind;
      facts.paths[i] = kind === 'file' && /^\d+$/.test(f[3] ?? '') ? { kind, size: Number(f[3]) } : { kind };
    } else if (tag === 'text' && i < facts.texts.length) facts.texts[i] = f[2] === '-' ? null : text(f[2] ?? '');
    else if (tag === 'free' && i < facts.free.length)
      facts.free[i] = /^\d+$/.test(f[2] ?? '') ? Number(f[2]) * 1024 : null;
    else if (tag === 'listen') listeners = parseListeners(text(f[1] ?? ''));
    else if (tag === 'image' && i < facts.images.length) {
      facts.images[i] = f[2] === 'id' ? { id: text(f[3] ?? '').trim() } : imageFailure(Number(f[3]), text(f[4] ?? ''));
    } else if (tag === 'nvidia') Object.assign(facts, parseNvidiaSmi(text(f[1] ?? '')));
    else if (tag === 'routes') facts.routes = parseRoutes(text(f[1] ?? ''));
    else if (tag === 'addrs') facts.addresses = parseAddresses(text(f[1] ?? ''));
    else if (tag === 'sysdir') sysfs.dirs.push(f.slice(1).join(' '));
    else if (tag === 'sysfiles') {
      for (const entry of text(f[1] ?? '').split('\n')) {
        const tab = entry.indexOf('\t');
        if (tab > 0) sysfs.files[entry.slice(0, tab)] = entry.slice(tab + 1);
      }
    } else if (tag === 'snapshot') {
      snapshot = { candidate: i, path: text(f[2] ?? ''), files: {}, shards: [] };
      dump = snapshot;
    } else if (tag === 'copy') {
      copy = { path: text(f[1] ?? ''), files: {}, shards: [] };
      dump = copy;
    } else if (tag === 'sfile' && dump) dump.files[f[1] ?? ''] = text(f[2] ?? '');
    else if (tag === 'shard' && dump)
      dump.shards.push({ name: text(f[3] ?? ''), size: Number(f[1]), headerLength: Number(f[2]) });
    else if (tag === 'header' && dump?.shards.length) dump.shards.at(-1)!.header = unhex(f[1] ?? '');
    else if (tag === 'rdir' || tag === 'rfile' || tag === 'rreceipt')
      readerDir = parseReaderDirLine(f, readerDir, unhex);
  }
  if (readerDir) facts.readerDir = readerDir;
  facts.ports = request.ports.map((p) => (listeners.has(p) ? 'in-use' : 'free'));
  facts.sysfs = sysfs;
  return { facts, ...(snapshot ? { snapshot } : {}), ...(copy ? { copy } : {}) };
}

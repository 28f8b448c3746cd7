// The facts of the machine this process runs on, as answers to a FactsRequest: in-process for
// `spark preflight --local`, and on a node through `spark preflight --node-facts` (which also
// dumps the RDMA part of sysfs, since the rules then run on another machine).
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statfsSync } from 'node:fs';
import { hostname, networkInterfaces, release } from 'node:os';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { toSparkError } from '../../errors/errors.js';
import { readSmallTextSync, SIZE_CAPS } from '../../files/small-file.js';
import { hfSnapshotPath, resolveRevision } from '../../engram/hf-cache.js';
import { isSnapshotPath } from '../sources.js';
import { openSnapshotFacts } from '../snapshot-reader.js';
import { hasCopyManifest, inspectCopy } from '../local-copy.js';
import { collectReaderDir } from './reader-dir.js';
import { pathFact } from './path-fact.js';
import { collectEngineLibs } from './engine-lib.js';
import { parseAddresses, parseNvidiaSmi, parseRoutes } from './parse.js';
import {
  TEXT_LIMIT,
  type CopyFact,
  type ErrorFact,
  type FactsRequest,
  type ImageFact,
  type NodeFacts,
  type NodeHello,
  type SnapshotFact,
  type SysfsDump,
} from '../../preflight-api/node-facts.js';

/** A small regular file's text; null when absent, not a regular file, unreadable or over TEXT_LIMIT. */
function readText(p: string): string | null {
  try {
    return readSmallTextSync(p, { what: 'file', maxBytes: TEXT_LIMIT });
  } catch {
    return null;
  }
}

/** Free bytes for an unprivileged writer at `path`, or at its nearest existing ancestor. */
export function freeBytes(path: string): number | null {
  let p = path;
  while (!existsSync(p) && dirname(p) !== p) p = dirname(p);
  try {
    const s = statfsSync(p);
    return s.bavail * s.bsize;
  } catch {
    return null;
  }
}

/** 'free', 'in-use', or 'denied' (a privileged port), by trying to listen on all addresses. */
export function probePort(port: number): Promise<'free' | 'in-use' | 'denied'> {
  return new Promise((resolvePromise) => {
    const server = createServer();
    server.once('error', (err: NodeJS.ErrnoException) => {
      resolvePromise(err.code === 'EADDRINUSE' ? 'in-use' : err.code === 'EACCES' ? 'denied' : 'free');
    });
    server.listen({ port, host: '0.0.0.0', exclusive: true }, () => server.close(() => resolvePromise('free')));
  });
}

/** Runs a program briefly; its stdout, or undefined when it cannot run or fails. */
function run(argv: string[], timeoutMs = 10_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    let stdout = '';
    let stderr = '';
    let child;
    try {
      child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (err) {
      resolve({ code: 127, stdout, stderr: (err as Error).message });
      return;
    }
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', (err) => {
      clearTimeout(timer);
      resolve({ code: 127, stdout, stderr: err.message });
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

async function imageFact(docker: string, ref: string): Promise<ImageFact> {
  const r = await run([docker, 'image', 'inspect', '--format', '{{.Id}}', ref]);
  if (r.code === 0 && r.stdout.trim() !== '') return { id: r.stdout.trim() };
  return imageFailure(r.code, r.stdout + r.stderr);
}

/** A failed `docker image inspect`: the image is absent, or docker itself failed. */
export function imageFailure(code: number | null, output: string): ImageFact {
  if (/no such (image|object)/i.test(output)) return { missing: true };
  const line = output.trim().split('\n').at(-1) ?? '';
  return { error: code === 127 ? 'docker is not installed (or not on PATH)' : line || `exit ${code}` };
}

/** The RDMA devices and network interfaces under a sysfs root, as a dump another machine can rebuild. */
export function dumpSysfs(root: string): SysfsDump {
  const dump: SysfsDump = { dirs: [], files: {} };
  const list = (p: string): string[] => {
    try {
      return readdirSync(p).sort();
    } catch {
      return [];
    }
  };
  const file = (rel: string) => {
    try {
      dump.files[rel] = readSmallTextSync(join(root, rel), {
        what: 'sysfs attribute',
        maxBytes: SIZE_CAPS.sysfs,
      }).replace(/\n$/, '');
    } catch {
      // unpopulated GID attributes fail to read (EINVAL) on real sysfs: absent, as the reader expects
    }
  };
  const ib = 'class/infiniband';
  if (existsSync(join(root, ib))) dump.dirs.push(ib);
  for (const hca of list(join(root, ib))) {
    for (const port of list(join(root, ib, hca, 'ports'))) {
      const base = `${ib}/${hca}/ports/${port}`;
      dump.dirs.push(base);
      file(`${base}/link_layer`);
      file(`${base}/state`);
      for (const sub of ['gids', 'gid_attrs/types', 'gid_attrs/ndevs']) {
        for (const i of list(join(root, base, sub))) file(`${base}/${sub}/${i}`);
      }
    }
  }
  for (const name of list(join(root, 'class', 'net'))) dump.dirs.push(`class/net/${name}`);
  return dump;
}

/** A model's snapshot in a Hugging Face cache: refs/main, else its only snapshot (as huggingface_hub). */
async function cachedSnapshot(modelDir: string): Promise<string | undefined> {
  try {
    return hfSnapshotPath(modelDir, (await resolveRevision(modelDir)).revision);
  } catch {
    return undefined;
  }
}

/** The first candidate that holds a checkpoint, as preflight resolves snapshots everywhere. */
export async function resolveCandidate(request: FactsRequest): Promise<{ candidate: number; dir: string } | undefined> {
  for (const [i, c] of request.snapshot.entries()) {
    const dir = 'dir' in c ? c.dir : await cachedSnapshot(c.modelDir);
    if (dir === undefined || !isSnapshotPath(dir)) continue;
    if ('notCopy' in c && c.notCopy && hasCopyManifest(dir)) continue;
    return { candidate: i, dir };
  }
  return undefined;
}

/** A SparkError as it travels to the machine that asked. */
export function errorFact(err: unknown): ErrorFact {
  const e = toSparkError(err);
  return { code: e.code, message: e.message, ...(typeof e.details.path === 'string' ? { path: e.details.path } : {}) };
}

async function snapshotFact(request: FactsRequest): Promise<SnapshotFact | undefined> {
  const found = await resolveCandidate(request);
  if (!found) return undefined;
  const fact: SnapshotFact = { ...found, result: { error: { code: 'E_INTERNAL', message: 'not read' } } };
  const config = readText(join(found.dir, 'config.json'));
  if (config !== null) fact.config = config;
  try {
    fact.result = { facts: await openSnapshotFacts(found.dir) };
  } catch (err) {
    fact.result = { error: errorFact(err) };
  }
  return fact;
}

/** The node's copy at `dir`, when it holds one. */
export async function copyFact(dir: string): Promise<CopyFact | undefined> {
  const got = await inspectCopy(dir);
  if (!got) return undefined;
  return { dir, result: 'error' in got ? { error: errorFact(got.error) } : got };
}

export function localHello(home: string, sparkVersion: string): NodeHello {
  const now = Date.now();
  return {
    hostname: hostname(),
    home,
    clockMs: now,
    sentMs: now,
    receivedMs: now,
    kernel: release(),
    spark: sparkVersion,
  };
}

function localAddresses(): string[] {
  return Object.values(networkInterfaces())
    .flatMap((list) => list ?? [])
    .map((a) => a.address);
}

/** Answers a request on this machine. `dumpSysfs`: include the sysfs dump (answering over ssh). */
export async function collectFacts(
  request: FactsRequest,
  hello: NodeHello,
  options: { via: 'local' | 'spark'; dumpSysfs: boolean },
): Promise<NodeFacts> {
  const nvidia = request.images.length > 0 ? await run(['nvidia-smi']) : undefined;
  const gpu = nvidia && nvidia.code === 0 ? parseNvidiaSmi(nvidia.stdout) : {};
  let routes: NodeFacts['routes'] = [];
  try {
    routes = parseRoutes(readFileSync(join(request.procNet, 'route'), 'utf8'));
  } catch {
    // not Linux: no routes to check
  }
  // The same source as the sh probe (ip), so both ways agree; Node's own list when ip is absent.
  const ip = await run(['ip', '-o', 'addr', 'show']);
  const addresses = ip.code === 0 ? parseAddresses(ip.stdout) : localAddresses();
  const facts: NodeFacts = {
    ...hello,
    via: options.via,
    ...gpu,
    paths: request.paths.map(pathFact),
    texts: request.texts.map(readText),
    free: request.free.map(freeBytes),
    ports: await Promise.all(request.ports.map((p) => probePort(p))),
    images: await Promise.all(request.images.map((ref) => imageFact(request.docker, ref))),
    addresses,
    routes,
  };
  if (options.dumpSysfs) facts.sysfs = dumpSysfs(request.sysfs);
  const snap = await snapshotFact(request);
  if (snap) facts.snapshot = snap;
  const copy = request.copyDir === undefined ? undefined : await copyFact(request.copyDir);
  if (copy) facts.copy = copy;
  if (request.readerDir !== undefined) facts.readerDir = collectReaderDir(request.readerDir);
  if (request.engineLibs !== undefined) facts.engineLibs = collectEngineLibs(request.engineLibs);
  return facts;
}

// A node's facts as the rules ask for them: by the path, port or image they requested. Asking
// for something the request did not name is a bug in the request builder (request.ts), and
// throws so the rule shows up as not checked rather than passing on a guess.
import { SparkError } from '../errors/errors.js';
import type { SnapshotFacts } from './types.js';
import type { LocalCopy } from '../engram/layer-source.js';
import type {
  EngineLibsFact,
  ErrorFact,
  FactsRequest,
  ImageFact,
  NodeFacts,
  PathFact,
  PortState,
  ReaderDirFact,
} from './node-facts.js';

export interface NodeView {
  facts: NodeFacts;
  request: FactsRequest;
  /** What a requested host path is on the node. */
  path(p: string): PathFact;
  /** A requested text file's content; undefined when absent or unreadable. */
  text(p: string): string | undefined;
  /** Free bytes at a requested path; undefined when unknown. */
  free(p: string): number | undefined;
  port(n: number): PortState;
  image(ref: string): ImageFact;
  /** The node's snapshot, validated; undefined when no candidate holds one. */
  snapshot(): { dir: string; facts: SnapshotFacts } | { dir: string; error: SparkError } | undefined;
  /** The serving stack's reader directory on the node, when the request named one. */
  readerDir(): ReaderDirFact | undefined;
  /** The node's machine and the files mounted over a stack's row library, when the request named any. */
  engineLibs(): EngineLibsFact | undefined;
  /** The node's copy of its Engram rows, read; undefined when it holds none. */
  copy(): { copy: LocalCopy; manifestProblems: string[] } | { error: ErrorFact } | undefined;
}

function lookup<T>(list: readonly unknown[], key: unknown, values: readonly T[], what: string): T {
  const i = list.indexOf(key);
  if (i < 0 || i >= values.length)
    throw new Error(`internal: preflight did not ask the node for ${what} ${String(key)}`);
  return values[i]!;
}

export function nodeView(facts: NodeFacts, request: FactsRequest): NodeView {
  return {
    facts,
    request,
    path: (p) => lookup(request.paths, p, facts.paths, 'the path'),
    text: (p) => lookup(request.texts, p, facts.texts, 'the text of') ?? undefined,
    free: (p) => lookup(request.free, p, facts.free, 'the free space at') ?? undefined,
    port: (n) => lookup(request.ports, n, facts.ports, 'the port'),
    image: (ref) => lookup(request.images, ref, facts.images, 'the image'),
    copy: () => facts.copy?.result,
    readerDir: () => (request.readerDir !== undefined ? facts.readerDir : undefined),
    engineLibs: () => (request.engineLibs !== undefined ? facts.engineLibs : undefined),
    snapshot() {
      const s = facts.snapshot;
      if (!s) return undefined;
      if ('facts' in s.result) return { dir: s.dir, facts: s.result.facts };
      const e = s.result.error;
      const code = e.code as ConstructorParameters<typeof SparkError>[0];
      return { dir: s.dir, error: new SparkError(code, e.message, e.path !== undefined ? { path: e.path } : {}) };
    },
  };
}

/** `a.b.c.d` is one of the node's addresses, or reachable from it without a gateway, or only through one. */
export function routeTo(
  facts: NodeFacts,
  address: string,
): 'own' | 'direct' | 'routed' | 'default' | 'none' | 'unknown' {
  if (facts.addresses.includes(address)) return 'own';
  const ip = ipv4Number(address);
  if (ip === undefined || facts.routes.length === 0) return 'unknown';
  let best: { prefix: number; gateway: string } | undefined;
  for (const r of facts.routes) {
    const dest = ipv4Number(r.destination);
    if (dest === undefined) continue;
    const mask = r.prefix === 0 ? 0 : (0xffffffff << (32 - r.prefix)) >>> 0;
    if ((ip & mask) >>> 0 === (dest & mask) >>> 0 && (!best || r.prefix > best.prefix)) best = r;
  }
  if (!best) return 'none';
  if (best.gateway === '0.0.0.0') return 'direct';
  return best.prefix === 0 ? 'default' : 'routed';
}

export function ipv4Number(text: string): number | undefined {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (!m) return undefined;
  const b = m.slice(1).map(Number);
  if (b.some((x) => x > 255)) return undefined;
  return ((b[0]! << 24) | (b[1]! << 16) | (b[2]! << 8) | b[3]!) >>> 0;
}

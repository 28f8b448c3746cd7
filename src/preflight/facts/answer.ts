// `spark preflight --node-facts REQUEST` on a node: answers the launching machine's request
// with this machine's facts (the sysfs dump included, since the rules run over there).
import { homedir } from 'node:os';
import { usageError } from '../../errors/errors.js';
import { VERSION } from '../../domain/version.js';
import { collectFacts, localHello } from './collect.js';
import { checkReaderDirRequest } from './reader-dir.js';
import {
  FACTS_VERSION,
  type FactsRequest,
  type NodeFacts,
  type SnapshotCandidate,
} from '../../preflight-api/node-facts.js';

const isStrings = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string');

function isCandidate(v: unknown): v is SnapshotCandidate {
  if (typeof v !== 'object' || v === null) return false;
  const c = v as Record<string, unknown>;
  return (
    typeof c.dir === 'string' ||
    (typeof c.hfCache === 'string' && typeof c.model === 'string' && typeof c.modelDir === 'string')
  );
}

function isReaderDir(v: unknown): boolean {
  if (typeof v !== 'object' || v === null) return false;
  const r = v as Record<string, unknown>;
  if (typeof r.dir !== 'string' || typeof r.glob !== 'string' || typeof r.headBytes !== 'number') return false;
  if (r.receipt !== undefined && typeof r.receipt !== 'string') return false;
  try {
    checkReaderDirRequest(r as { dir: string; glob: string; headBytes: number; receipt?: string });
    return true;
  } catch {
    return false;
  }
}

/** The request as JSON text, checked for shape (exit 2 naming what is wrong). */
export function parseFactsRequest(text: string): FactsRequest {
  let doc: Record<string, unknown>;
  try {
    doc = JSON.parse(text) as Record<string, unknown>;
  } catch (err) {
    throw usageError(`--node-facts: not JSON (${(err as Error).message})`);
  }
  if (typeof doc !== 'object' || doc === null) throw usageError('--node-facts: expected a JSON object');
  if (doc.version !== FACTS_VERSION)
    throw usageError(`--node-facts: request version ${String(doc.version)}, this spark answers ${FACTS_VERSION}`);
  for (const key of ['paths', 'texts', 'free', 'images'] as const)
    if (!isStrings(doc[key])) throw usageError(`--node-facts: ${key} must be a list of strings`);
  const ports = doc.ports;
  if (!Array.isArray(ports) || !ports.every((p) => Number.isInteger(p) && p > 0 && p < 65536))
    throw usageError('--node-facts: ports must be a list of port numbers');
  if (typeof doc.docker !== 'string' || typeof doc.sysfs !== 'string' || typeof doc.procNet !== 'string') {
    throw usageError('--node-facts: docker, sysfs and procNet must be strings');
  }
  if (!Array.isArray(doc.snapshot) || !doc.snapshot.every(isCandidate))
    throw usageError('--node-facts: snapshot must be a list of candidates');
  if (doc.engineLibs !== undefined && !isStrings(doc.engineLibs))
    throw usageError('--node-facts: engineLibs must be a list of strings');
  if (doc.copyDir !== undefined && typeof doc.copyDir !== 'string')
    throw usageError('--node-facts: copyDir must be a string');
  if (doc.readerDir !== undefined && !isReaderDir(doc.readerDir))
    throw usageError('--node-facts: readerDir must be {dir, glob, headBytes, receipt?} with a plain glob');
  return doc as unknown as FactsRequest;
}

export async function answerFactsRequest(
  text: string,
  env: NodeJS.ProcessEnv,
): Promise<NodeFacts & { version: number }> {
  const request = parseFactsRequest(text);
  const facts = await collectFacts(request, localHello(env.HOME ?? homedir(), VERSION), {
    via: 'spark',
    dumpSysfs: true,
  });
  return { version: FACTS_VERSION, ...facts };
}

// Gathering one node's facts over ssh, bounded in time: a hello (who the node is, its home,
// clock, kernel and whether spark is installed), then the request answered by spark on the
// node when it is there, else by the sh probe. A node that does not answer the hello is
// unreachable; every other failure still leaves the facts of whichever way worked.
import { join } from 'node:path';
import { capture, lastLine, nodeArgv, type Tools } from '../../remote/ssh.js';
import { helloScript, parseHello, parseProbe, probeScript } from './probe-sh.js';
import { engineLibScript, parseEngineLibs, unreadEngineLibs } from './engine-lib.js';
import { judgeProbedCopy, judgeProbedSnapshot, rebuildSysfs } from './rebuild.js';
import { FACTS_VERSION, type FactsRequest, type NodeFacts, type NodeHello } from '../../preflight-api/node-facts.js';

export interface GatherTarget {
  rank: number;
  host: string;
}

export type Gathered =
  | { ok: true; facts: NodeFacts; request: FactsRequest; sysfsRoot?: string; notes: string[] }
  | { ok: false; unreachable: string };

export interface GatherOptions {
  tools: Tools;
  env: NodeJS.ProcessEnv;
  /** The most one node may take, hello included. */
  timeoutMs: number;
  /** A directory of this machine's own for rebuilding the node's sysfs and snapshot. */
  scratch: string;
}

/** The reason a failed ssh run gives, in one line. */
function why(
  r: { code: number | null; signal: NodeJS.Signals | null; stderr: string; stdout: string },
  ms: number,
): string {
  if (r.signal === 'SIGKILL') return `no answer within ${Math.round(ms / 1000)} s`;
  const line = lastLine(r.stderr) || lastLine(r.stdout);
  return `${r.code === 255 ? 'ssh failed' : `exit ${r.code}`}${line ? `: ${line}` : ''}`;
}

/** Facts printed by `spark preflight --node-facts` on the node, checked for shape. */
function sparkFacts(stdout: string, request: FactsRequest, hello: NodeHello): NodeFacts {
  const doc = JSON.parse(stdout) as Partial<NodeFacts> & { version?: unknown };
  if (doc.version !== FACTS_VERSION)
    throw new Error(`it answers facts version ${String(doc.version)}, this spark reads ${FACTS_VERSION}`);
  const lengths: [unknown, number][] = [
    [doc.paths, request.paths.length],
    [doc.texts, request.texts.length],
    [doc.free, request.free.length],
    [doc.ports, request.ports.length],
    [doc.images, request.images.length],
  ];
  // Library files it does report must be all of them (one it left out would pass unread).
  if (doc.engineLibs !== undefined) lengths.push([doc.engineLibs?.files, request.engineLibs?.length ?? 0]);
  if (
    lengths.some(([a, n]) => !Array.isArray(a) || a.length !== n) ||
    !Array.isArray(doc.routes) ||
    !Array.isArray(doc.addresses)
  ) {
    throw new Error('its answer does not match the request');
  }
  const facts = { ...(doc as NodeFacts), ...hello, via: 'spark' as const };
  delete (facts as { version?: unknown }).version;
  return facts;
}

/** The probe's answer as facts: its snapshot and copy judged by this machine's readers, rebuilt under `scratch`. */
export async function factsFromProbe(
  out: string,
  request: FactsRequest,
  hello: NodeHello,
  scratch: string,
): Promise<NodeFacts> {
  const parsed = parseProbe(out, request, hello);
  const facts = parsed.facts;
  if (parsed.snapshot) facts.snapshot = await judgeProbedSnapshot(parsed.snapshot, join(scratch, 'snapshot'));
  const copy = parsed.copy ? await judgeProbedCopy(parsed.copy, join(scratch, 'copy')) : undefined;
  if (copy) facts.copy = copy;
  return facts;
}

export async function gatherNode(
  node: GatherTarget,
  makeRequest: (hello: NodeHello) => FactsRequest,
  options: GatherOptions,
): Promise<Gathered> {
  const { tools, env } = options;
  const deadline = Date.now() + options.timeoutMs;
  const left = () => Math.max(1, deadline - Date.now());
  const sentMs = Date.now();
  const h = await capture(nodeArgv(node.host, ['sh', '-c', helloScript(tools.spark)], tools), env, left());
  const receivedMs = Date.now();
  let hello: NodeHello;
  try {
    if (h.code !== 0) throw new Error(why(h, options.timeoutMs));
    hello = parseHello(h.stdout, sentMs, receivedMs);
  } catch (err) {
    return { ok: false, unreachable: (err as Error).message };
  }
  const request = makeRequest(hello);
  const notes: string[] = [];
  let facts: NodeFacts | undefined;
  if (hello.spark !== undefined) {
    const r = await capture(
      nodeArgv(node.host, [tools.spark, 'preflight', '--node-facts', JSON.stringify(request)], tools),
      env,
      left(),
    );
    try {
      if (r.code !== 0) throw new Error(why(r, options.timeoutMs));
      facts = sparkFacts(r.stdout, request, hello);
    } catch (err) {
      notes.push(
        `${tools.spark} on the node could not answer (${(err as Error).message}); the sh probe checked it instead`,
      );
    }
  }
  if (!facts) {
    const r = await capture(nodeArgv(node.host, ['sh', '-c', probeScript(request)], tools), env, left());
    try {
      if (r.code !== 0 && r.signal) throw new Error(why(r, options.timeoutMs));
      facts = await factsFromProbe(r.stdout, request, hello, options.scratch);
    } catch (err) {
      return { ok: false, unreachable: `the node answered ssh but not the probe: ${(err as Error).message}` };
    }
  }
  if (request.engineLibs !== undefined && facts.engineLibs === undefined) {
    const r = await capture(nodeArgv(node.host, ['sh', '-c', engineLibScript(request.engineLibs)], tools), env, left());
    try {
      facts.engineLibs = parseEngineLibs(r.stdout, request.engineLibs);
    } catch (err) {
      // Each file then fails enginelib.file with this reason: a file nobody read never passes.
      const ended = r.signal && r.signal !== 'SIGKILL' ? `killed by ${r.signal}` : why(r, options.timeoutMs);
      const reason = r.code === 0 ? (err as Error).message : `the library check did not finish (${ended})`;
      facts.engineLibs = unreadEngineLibs(request.engineLibs, reason);
    }
  }
  const out: Gathered = { ok: true, facts, request, notes };
  if (facts.sysfs) out.sysfsRoot = rebuildSysfs(facts.sysfs, join(options.scratch, 'sys'));
  return out;
}

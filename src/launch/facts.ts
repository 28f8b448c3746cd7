// Where a launch plan's facts about the nodes come from. The plan itself is made by one set of
// rules (prepare.ts); only these answers differ: a dry run contacts no node and takes this
// machine's (its home, its copy of the model cache), a launch asks the nodes over ssh and runs
// the preflight before it asks them anything else.
import { homedir } from 'node:os';
import { SparkError } from '../errors/errors.js';
import type { Io } from '../terminal/io.js';
import { formatReport, runPreflight } from '../preflight/index.js';
import { probeGids, probeHomes, readTextViaHead } from './probe.js';
import { readLocalText, type ModelSnapshot } from './snapshot.js';
import type { Tools } from '../remote/ssh.js';
import type { NodeFacts, PlanRequest } from './prepare.js';

/**
 * A dry run's facts: this machine's home for every node, refs read from this machine's copy of
 * the cache. A ref this machine cannot read is one the launch reads on the head: the model id
 * stands in for the snapshot, and a note says so. Anything else that stops the resolution
 * (a ref that holds no commit, a bad --revision) stops the launch too, so it stops the dry run.
 */
export function thisMachineFacts(io: Io, tools: Pick<Tools, 'docker'>): NodeFacts {
  const home = io.env.HOME ?? homedir();
  const unread = new Set<string>();
  return {
    docker: tools.docker,
    thisHome: home,
    refReader: () => async (path) => {
      const text = await readLocalText(path);
      if (text === undefined) unread.add(path);
      return text;
    },
    homes: (nodes) => Promise.resolve(new Map(nodes.map((n) => [n.rank, home]))),
    gids: () => Promise.resolve(undefined),
    check: () => Promise.resolve(),
    standIn: (failure, model) => {
      const path = failure.details.path;
      if (failure.code !== 'E_SNAPSHOT' || typeof path !== 'string' || !unread.has(path)) return undefined;
      return (
        `${path} is not readable on this machine, so the plan passes the model id ${model} where the launch passes the ` +
        'snapshot: the launch reads the ref on the head and pins that revision (or pass --revision)'
      );
    },
    notes: (inputs, about) => ({
      // The launch's preflight reports these; a dry run has no preflight.
      first: inputs.diagnostics.map((d) => `${d.severity}: ${d.message}`),
      last: [
        ...(about.usesHome
          ? [`~ in host paths is shown as this machine's home (${home}); the launch asks each node for its own`]
          : []),
        ...(about.asksGid
          ? [
              'B12X_ROCE_GID_INDEX is detected on each node at launch (spark gid --index-only); a dry run cannot show it',
            ]
          : []),
      ],
    }),
  };
}

/** What a launch's facts need beyond the plan's request: preflight's knobs and the Ctrl-C signal. */
export interface AskRequest extends PlanRequest {
  sparkBin?: string;
  nodeTimeoutMs?: number;
  force?: boolean;
  signal?: AbortSignal;
}

export function interrupted(cleaned?: string): SparkError {
  return new SparkError('E_NODE_FAILED', `launch interrupted${cleaned ? `; ${cleaned}` : ', nothing was started'}`);
}

/**
 * A launch's facts: asked of the nodes over ssh. `check` is the preflight (`spark preflight
 * --cluster`, every node) against the very snapshot the containers are given; its counts land
 * in `preflight`. A snapshot that could not be resolved is refused, after the preflight, whose
 * report says why (a NAS not mounted, a node down) better than the ref that was not found.
 */
export function askNodesFacts(
  req: AskRequest,
  io: Io,
  tools: Tools,
  preflight: { errors: number; warnings: number },
): NodeFacts {
  return {
    docker: tools.docker,
    thisHome: io.env.HOME ?? homedir(),
    refReader: (head) => readTextViaHead(head, tools, io.env),
    homes: (nodes) => probeHomes(nodes, tools, io.env),
    gids: (nodes, query) => probeGids(nodes, query, tools, io.env),
    check: (snapshot) => runChecks(req, io, snapshot, preflight),
    standIn: () => undefined,
    notes: () => ({ first: [], last: [] }),
  };
}

async function runChecks(
  req: AskRequest,
  io: Io,
  snapshot: ModelSnapshot | undefined,
  counts: { errors: number; warnings: number },
): Promise<void> {
  const report = await runPreflight(
    {
      recipe: req.recipe,
      cluster: req.cluster,
      ...(req.env ? { env: req.env } : {}),
      ...(req.sparkBin !== undefined ? { sparkBin: req.sparkBin } : {}),
      ...(req.nodeTimeoutMs !== undefined ? { nodeTimeoutMs: req.nodeTimeoutMs } : {}),
      ...(snapshot ? { servedSnapshot: snapshot.hostPath } : {}),
    },
    io,
  );
  counts.errors = report.counts.error;
  counts.warnings = report.counts.warn;
  if (report.counts.error > 0 || report.counts.warn > 0)
    io.stderr(formatReport(report, io.color).replace(/\n?$/, '\n'));
  if (report.counts.error > 0 && !req.force) {
    throw new SparkError(
      'E_CHECK_FAILED',
      `preflight found ${report.counts.error} error(s), nothing was started; fix them, or pass --force to launch anyway`,
    );
  }
  if (req.signal?.aborted) throw interrupted();
}

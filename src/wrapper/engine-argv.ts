// What the wrapper reads from the engine's own command line: the launcher appends --nnodes,
// --node-rank and the tensor-parallel size (SGLang: --tp/--tp-size; vLLM:
// --tensor-parallel-size/-tp), as "--flag N" or "--flag=N".
import { usageError } from '../errors/errors.js';

const NNODES = ['--nnodes'];
const NODE_RANK = ['--node-rank'];
const TP = ['--tp', '--tp-size', '--tensor-parallel-size', '-tp'];

/** The last value of any of `flags` in argv, with the flag that gave it. */
export function flagValue(
  argv: readonly string[],
  flags: readonly string[],
): { flag: string; value: string } | undefined {
  let found: { flag: string; value: string } | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    for (const f of flags) {
      if (a === f && i + 1 < argv.length) found = { flag: f, value: argv[i + 1]! };
      else if (a.startsWith(`${f}=`)) found = { flag: f, value: a.slice(f.length + 1) };
    }
  }
  return found;
}

/** Digits only, as the --emit-sh script reads them (no spaces or sign, which the engine's int() would take). */
function count(text: string, where: string, min: number): number {
  if (!/^[0-9]+$/.test(text) || Number(text) < min || !Number.isSafeInteger(Number(text))) {
    throw usageError(`${where} must be a whole number >= ${min}, got '${text}'`);
  }
  return Number(text);
}

export interface Decided {
  value: number;
  /** Where it came from, for the log line: "NODE_RANK", "--nnodes", ... */
  from: string;
}

/** The node's rank: NODE_RANK, else --node-rank in the engine argv; both set must agree. */
export function decideRank(env: NodeJS.ProcessEnv, argv: readonly string[]): Decided | undefined {
  const fromEnv =
    env.NODE_RANK !== undefined && env.NODE_RANK !== '' ? count(env.NODE_RANK, 'NODE_RANK', 0) : undefined;
  const flag = flagValue(argv, NODE_RANK);
  const fromArgv = flag ? count(flag.value, `the engine's ${flag.flag}`, 0) : undefined;
  if (fromEnv !== undefined && fromArgv !== undefined && fromEnv !== fromArgv) {
    throw usageError(`NODE_RANK=${fromEnv} but the engine is started with --node-rank ${fromArgv}; they must agree`);
  }
  if (fromEnv !== undefined) return { value: fromEnv, from: 'NODE_RANK' };
  if (fromArgv !== undefined) return { value: fromArgv, from: flag!.flag };
  return undefined;
}

/**
 * The number of ranks splitting the tables: SPARK_WORLD_SIZE, else --nnodes, else the
 * tensor-parallel size. One rank per node, so --nnodes and the TP size must agree when both
 * are given (otherwise NODE_RANK does not number the table's ranks).
 */
export function decideWorld(env: NodeJS.ProcessEnv, argv: readonly string[]): Decided | undefined {
  if (env.SPARK_WORLD_SIZE !== undefined && env.SPARK_WORLD_SIZE !== '') {
    return { value: count(env.SPARK_WORLD_SIZE, 'SPARK_WORLD_SIZE', 1), from: 'SPARK_WORLD_SIZE' };
  }
  const nnodes = flagValue(argv, NNODES);
  const tp = flagValue(argv, TP);
  const n = nnodes ? count(nnodes.value, `the engine's ${nnodes.flag}`, 1) : undefined;
  const t = tp ? count(tp.value, `the engine's ${tp.flag}`, 1) : undefined;
  if (n !== undefined && t !== undefined && n !== t) {
    throw usageError(
      `the engine has ${nnodes!.flag} ${n} but ${tp!.flag} ${t}: the ranges are per node (NODE_RANK), so set SPARK_WORLD_SIZE to the number of ranks that split the Engram tables`,
    );
  }
  if (n !== undefined) return { value: n, from: nnodes!.flag };
  if (t !== undefined) return { value: t, from: tp!.flag };
  return undefined;
}

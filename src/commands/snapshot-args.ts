// Arguments every snapshot-reading command shares: the snapshot path (or $SPARK_ENGRAM_DIR)
// and the Engram naming patterns.
import type { Command } from 'commander';
import { usageError } from '../errors/errors.js';
import type { EngramPatterns } from '../engram/engram-tables.js';
import { fromEnv } from './options.js';

export interface PatternFlags {
  weightPattern?: string;
  scalePattern?: string;
}

export function snapshotArgument(arg: string | undefined, env: NodeJS.ProcessEnv): string {
  const dir = fromEnv(arg, env, 'SPARK_ENGRAM_DIR');
  if (dir === undefined) throw usageError('a snapshot argument is required (or set SPARK_ENGRAM_DIR)');
  return dir;
}

export function engramPatternFlags(cmd: Command): Command {
  return cmd
    .option('--weight-pattern <regex>', 'Engram weight tensor names, one capture group for the layer')
    .option('--scale-pattern <regex>', 'Engram scale tensor names, one capture group for the layer');
}

/** A --weight-pattern / --scale-pattern value: valid, one capture group (matching is time-bound). */
export function compilePattern(flag: string, source: string): RegExp {
  let re: RegExp;
  try {
    re = new RegExp(source);
  } catch (err) {
    throw usageError(`${flag}: not a valid regular expression (${(err as Error).message})`);
  }
  if (new RegExp(`${source}|`).exec('')!.length - 1 !== 1) {
    throw usageError(`${flag} must have exactly one capture group (the layer id), got '${source}'`);
  }
  return re;
}

export function patternsFromFlags(flags: PatternFlags): Partial<EngramPatterns> {
  const out: Partial<EngramPatterns> = {};
  if (flags.weightPattern !== undefined) out.weightPattern = compilePattern('--weight-pattern', flags.weightPattern);
  if (flags.scalePattern !== undefined) out.scalePattern = compilePattern('--scale-pattern', flags.scalePattern);
  return out;
}

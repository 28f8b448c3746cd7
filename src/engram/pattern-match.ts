// Matching tensor names against the Engram naming patterns, under a time bound.
//
// `--weight-pattern '(a+)+$'` is a valid regex whose matching takes exponential time on a name
// like 'aaaa…a.x': one such name in a header and the command never returns. Why a time bound
// and not a ban on "dangerous" shapes: a syntactic rule (no nested quantifiers) refuses useful
// patterns and still misses overlapping alternations (`(a|ab)*c`) and polynomial blow-ups on
// long names; a bound is exact. JavaScript cannot interrupt a running regex, except when it
// runs as a vm script with a timeout: V8 then stops it. The whole batch of names runs as ONE
// such script (a call per name would cost more than the matching), so 100k names cost ~25 ms.
import vm from 'node:vm';
import { SparkError } from '../errors/errors.js';

/** Far above what a sane pattern needs for a checkpoint's names (tens of ms). */
export const MATCH_BUDGET_MS = 2000;

/**
 * The layer each name's capture group names (undefined: no match, or a capture that is not a
 * decimal layer id), in the order of `names`. `flag` names the pattern in the error.
 */
export function captureLayers(
  names: readonly string[],
  pattern: RegExp,
  flag: string,
  trusted = false,
): (number | undefined)[] {
  const captures = trusted ? names.map((n) => pattern.exec(n)?.[1]) : boundedCaptures(names, pattern, flag);
  return captures.map((c) => (c !== undefined && /^\d+$/.test(c) ? Number(c) : undefined));
}

function boundedCaptures(names: readonly string[], pattern: RegExp, flag: string): (string | undefined)[] {
  // A fresh copy: a caller's /g or /y pattern keeps lastIndex between calls.
  const re = new RegExp(pattern.source, pattern.flags.replace(/[gy]/g, ''));
  const context = vm.createContext({ re, names });
  try {
    return vm.runInContext('names.map((n) => { const m = re.exec(n); return m ? m[1] : undefined; })', context, {
      timeout: MATCH_BUDGET_MS,
    }) as (string | undefined)[];
  } catch (err) {
    if ((err as { code?: string }).code !== 'ERR_SCRIPT_EXECUTION_TIMEOUT') throw err;
    throw new SparkError(
      'E_USAGE',
      `${flag} '${pattern.source}' did not finish matching ${names.length} tensor names within ${MATCH_BUDGET_MS / 1000} s ` +
        '(catastrophic backtracking: nested or overlapping quantifiers such as (a+)+); write it without them, ' +
        "e.g. '^layers\\.(\\d+)\\.engram\\.embed\\.weight$'",
      { pattern: pattern.source },
    );
  }
}

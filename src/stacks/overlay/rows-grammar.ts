// SPARK_ENGRAM_ROWS in the overlay's grammar. The overlay parses `layer:lo:hi` entries only and
// raises at install on anything else, and it parses the variable even when a sparse copy's
// manifest gives the ranges (docs/serving-stacks.md, stack A); spark before this version wrote
// `layer:lo-hi`, so recipes, env files and cluster files may still carry that form.
import { dashEntries, formatEngramRows, parseEngramRows } from '../../engram/ranges.js';
import { defineRule, envSourceName, finding, whereEnv } from '../../preflight-api/rule.js';
import type { PreflightContext } from '../../preflight-api/types.js';
import { engramTables, sharedRowsFix, sharedRowsProblem } from './ranges-rules.js';

/** The value in the overlay's grammar, or undefined when it does not parse at all. */
function rewritten(value: string): string | undefined {
  try {
    return formatEngramRows(parseEngramRows(value));
  } catch {
    return undefined; // engram.ranges-tile reports values that do not parse
  }
}

/**
 * The value rewritten in the overlay's grammar, unless it does not tile for this world (a short
 * range, a full range on every rank): then what engram.ranges-tile would say, never the same
 * mistake in the new grammar.
 */
async function grammarFix(ctx: PreflightContext, value: string): Promise<string> {
  const tables = await engramTables(ctx);
  if (sharedRowsProblem(value, ctx.world, tables)) return sharedRowsFix(ctx.world, tables);
  return `write SPARK_ENGRAM_ROWS = "${value}"`;
}

export const rowsGrammar = defineRule({
  id: 'engram.rows-grammar',
  title: "SPARK_ENGRAM_ROWS is written in the overlay's grammar, layer:lo:hi",
  families: ['dsv41'],
  severity: 'error',
  also: 'warn when SPARK_ENGRAM_DIR is not set (the overlay is off, so nothing reads the value yet)',
  scope: 'files',
  evidence:
    'The overlay parses SPARK_ENGRAM_ROWS as comma-separated LAYER:LO:HI entries and raises at install on anything ' +
    'else ("expected LAYER:LO:HI entries"), even when a sparse copy\'s manifest gives the ranges (docs/serving-stacks.md, stack ' +
    'A); earlier spark versions wrote layer:lo-hi.',
  fix: "write it as layer:lo:hi (1:0:96001542,14:0:96004170), or drop it and let the wrapper or the copy's manifest give the ranges",
  async check(ctx) {
    const v = ctx.env.get('SPARK_ENGRAM_ROWS');
    if (!v) return [];
    const dashed = dashEntries(v.value);
    if (dashed.length === 0) return [];
    const on = ctx.env.has('SPARK_ENGRAM_DIR');
    const value = rewritten(v.value);
    const entries = dashed.map((e) => `'${e}'`).join(', ');
    return [
      finding(this, {
        message:
          `SPARK_ENGRAM_ROWS='${v.value}' (set in ${envSourceName(v)}) writes ${entries} in the old layer:lo-hi form; ` +
          'the overlay reads layer:lo:hi only and raises at install' +
          (on ? '' : ' (SPARK_ENGRAM_DIR is not set, so the overlay is off for now)'),
        where: whereEnv(v),
        severity: on ? 'error' : 'warn',
        ...(value ? { fix: await grammarFix(ctx, value) } : {}),
      }),
    ];
  },
});

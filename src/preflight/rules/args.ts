// The argument vector itself: values the engine will refuse, and flags the launcher owns.
import { readFileSync } from 'node:fs';
import { at, type Engine } from '../../recipes/index.js';
import type { ArgFlag } from '../../recipes/args.js';
import { launcherEnvKeys } from '../../recipes/engine-args.js';
import { defineRule, envSourceName, finding, whereArg, whereEnv } from '../../preflight-api/rule.js';

export const jsonValue = defineRule({
  id: 'args.json-value',
  title: 'JSON-valued flags hold valid JSON',
  severity: 'error',
  scope: 'files',
  evidence:
    'Flags like --speculative-config and --compilation-config take JSON (recipes/deepseek-v4-flash-eugr-agent writes them wrapped ' +
    "in single quotes); the engine's argument parser fails at boot on malformed JSON.",
  fix: 'fix the JSON (double-quoted keys and strings, no trailing commas)',
  check(ctx) {
    return ctx.args.flags
      .filter((f) => f.json && !f.json.ok && typeof f.value === 'string')
      .map((f) => {
        const text = f.value as string;
        const d = jsonDefect(text);
        const line = defectLine(ctx, f, text, d.offset);
        return finding(this, {
          message: `${f.name} is not valid JSON: ${d.what}${line === undefined ? '' : ` (line ${line})`}`,
          where: line === undefined ? whereArg(ctx, f) : at(ctx.recipe.file, line),
          fix: d.fix,
        });
      });
  },
});

/** What is wrong with JSON text a person wrote, in their terms, and where (an offset into it). */
export function jsonDefect(text: string): { what: string; fix: string; offset: number } {
  const trailing = /,(\s*)[}\]]/.exec(text);
  if (trailing) {
    const close = text[trailing.index + 1 + trailing[1]!.length];
    return {
      what: `a trailing comma before '${close}'`,
      fix: `remove the comma before '${close}' (JSON allows none)`,
      offset: trailing.index,
    };
  }
  const single = /[{,[:]\s*'/.exec(text);
  if (single) {
    return {
      what: "Python-style single quotes ('…')",
      fix: 'write every key and string in double quotes ("…"), as JSON requires',
      offset: single.index,
    };
  }
  const literal = /[:,[]\s*(True|False|None)\b/.exec(text);
  if (literal) {
    const json = { True: 'true', False: 'false', None: 'null' }[literal[1] as 'True' | 'False' | 'None'];
    return { what: `Python's ${literal[1]}`, fix: `write ${json}, as JSON does`, offset: literal.index };
  }
  const bare = /[{,]\s*([A-Za-z_][A-Za-z0-9_]*)\s*:/.exec(text);
  if (bare) return { what: `the key ${bare[1]} is not quoted`, fix: `write "${bare[1]}"`, offset: bare.index };
  try {
    JSON.parse(text);
  } catch (err) {
    const message = (err as Error).message;
    const pos = /position (\d+)/.exec(message);
    return {
      what: message,
      fix: 'fix the JSON (double-quoted keys and strings, no trailing commas)',
      offset: pos ? Number(pos[1]) : 0,
    };
  }
  return { what: 'not JSON', fix: 'fix the JSON', offset: 0 };
}

/** The recipe line holding `offset` of the flag's value: found in the file, not assumed. */
function defectLine(ctx: Parameters<typeof whereArg>[0], f: ArgFlag, text: string, offset: number): number | undefined {
  // `--flag value` has its value in the next element; `--flag=value` in the same one.
  const valueIndex = ctx.recipe.args[f.index] === f.name ? f.index + 1 : f.index;
  const from = ctx.recipe.locate('args', valueIndex) ?? ctx.recipe.locate('args', f.index);
  if (from === undefined) return undefined;
  let source: string[];
  try {
    source = readFileSync(ctx.recipe.file, 'utf8').split(/\r?\n/);
  } catch {
    return from;
  }
  const lines = text.split('\n');
  let k = 0;
  for (let consumed = 0; k < lines.length - 1 && consumed + lines[k]!.length < offset; k++)
    consumed += lines[k]!.length + 1;
  const needle = lines[k]!.trim().slice(0, 60);
  for (let i = from - 1; i < Math.min(source.length, from + 200); i++) {
    if (needle !== '' && source[i]!.includes(needle)) return i + 1;
  }
  return from;
}

/** Flags the launcher appends to every engine command (dsv41 recipe: "The launcher also appends"). */
export const LAUNCHER_FLAGS: Record<Engine, readonly string[]> = {
  sglang: [
    '--model-path',
    '--tp',
    '--tp-size',
    '--tensor-parallel-size',
    '--nnodes',
    '--node-rank',
    '--dist-init-addr',
    '--host',
    '--port',
  ],
  vllm: [
    '--tensor-parallel-size',
    '-tp',
    '--pipeline-parallel-size',
    '-pp',
    '--nnodes',
    '--node-rank',
    '--master-addr',
    '--master-port',
    '--headless',
    '--host',
    '--port',
  ],
};

export const launcherOwned = defineRule({
  id: 'args.launcher-owned',
  title: 'args do not repeat the flags the launcher appends',
  severity: 'warn',
  scope: 'files',
  evidence:
    'The launcher appends --model-path, --tp, --nnodes, --node-rank, --dist-init-addr, --host and --port from the ' +
    'recipe and cluster (recipes/dsv41-flash-4x-sglang-aiden16); a second copy in args makes the result depend on argument order. It ' +
    'also sets NODE_RANK, SPARK_WORLD_SIZE and VLLM_HOST_IP / SGLANG_HOST_IP per node: one shared value is wrong on ' +
    'every node but one.',
  fix: 'remove the flag from args; set the recipe key (port, tensor_parallel_size) or the cluster file (dist_addr) instead',
  check(ctx) {
    const owned = LAUNCHER_FLAGS[ctx.recipe.engine];
    const flags = ctx.args.flags
      .filter((f) => owned.includes(f.name))
      .map((f) =>
        finding(this, { message: `args sets ${f.name}, which the launcher appends itself`, where: whereArg(ctx, f) }),
      );
    const env = launcherEnvKeys(ctx.recipe.engine).flatMap((key) => {
      const v = ctx.env.get(key);
      if (!v) return [];
      return [
        finding(this, {
          message: `${envSourceName(v)} sets ${key}=${v.value}, which the launcher sets per node`,
          where: whereEnv(v),
          fix: "remove it; the launcher sets it from the cluster file (the node's rank, its dist_addr)",
        }),
      ];
    });
    return [...flags, ...env];
  },
});

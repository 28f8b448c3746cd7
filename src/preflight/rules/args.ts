// The argument vector itself: values the engine will refuse, and flags the launcher owns.
import { type Engine } from '../../recipes/index.js';
import { launcherEnvKeys } from '../../engine/args.js';
import { defineRule, envSourceName, finding, whereArg, whereEnv } from '../rule.js';

export const jsonValue = defineRule({
  id: 'args.json-value',
  title: 'JSON-valued flags hold valid JSON',
  severity: 'error',
  scope: 'files',
  evidence:
    'Flags like --speculative-config and --compilation-config take JSON (seed: eugr agent recipe writes them wrapped ' +
    "in single quotes); the engine's argument parser fails at boot on malformed JSON.",
  fix: 'fix the JSON (double-quoted keys and strings, no trailing commas)',
  check(ctx) {
    return ctx.args.flags
      .filter((f) => f.json && !f.json.ok)
      .map((f) =>
        finding(this, {
          message: `${f.name} is not valid JSON: ${f.json && !f.json.ok ? f.json.error : ''}`,
          where: whereArg(ctx, f),
        }),
      );
  },
});

/** Flags the launcher appends to every engine command (dsv41 recipe: "The launcher also appends"). */
export const LAUNCHER_FLAGS: Record<Engine, readonly string[]> = {
  sglang: ['--model-path', '--tp', '--tp-size', '--tensor-parallel-size', '--nnodes', '--node-rank', '--dist-init-addr', '--host', '--port'],
  vllm: [
    '--tensor-parallel-size', '-tp', '--pipeline-parallel-size', '-pp', '--nnodes', '--node-rank', '--master-addr', '--master-port',
    '--headless', '--host', '--port',
  ],
};

export const launcherOwned = defineRule({
  id: 'args.launcher-owned',
  title: 'args do not repeat the flags the launcher appends',
  severity: 'warn',
  scope: 'files',
  evidence:
    'The launcher appends --model-path, --tp, --nnodes, --node-rank, --dist-init-addr, --host and --port from the ' +
    'recipe and cluster (seed: dsv41 recipe); a second copy in args makes the result depend on argument order. It ' +
    'also sets NODE_RANK, SPARK_WORLD_SIZE and VLLM_HOST_IP / SGLANG_HOST_IP per node: one shared value is wrong on ' +
    'every node but one.',
  fix: 'remove the flag from args; set the recipe key (port, tensor_parallel_size) or the cluster file (dist_addr) instead',
  check(ctx) {
    const owned = LAUNCHER_FLAGS[ctx.recipe.engine];
    const flags = ctx.args.flags
      .filter((f) => owned.includes(f.name))
      .map((f) => finding(this, { message: `args sets ${f.name}, which the launcher appends itself`, where: whereArg(ctx, f) }));
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

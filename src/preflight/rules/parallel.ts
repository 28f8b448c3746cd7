// Parallelism against the cluster and the model: one rank per node, TP must divide the
// dimensions it splits, and SGLang's expert parallelism must fit inside TP. The shape and the
// nodes that run come from src/recipes/topology.ts, which the launcher uses too.
import { at } from '../../recipes/index.js';
import { defineRule, finding, whereArg, whereField } from '../../preflight-api/rule.js';
import type { PreflightContext } from '../../preflight-api/types.js';

/** Tensor-parallel size as the launcher passes it (the recipe key, else args, else required_nodes). */
export function tensorParallel(ctx: PreflightContext): number {
  return ctx.shape.tp;
}

export const nodes = defineRule({
  id: 'parallel.nodes',
  title: 'tensor_parallel_size × pipeline_parallel_size = required_nodes ≤ the nodes in the cluster, head first',
  severity: 'error',
  also: 'warn when the cluster has more nodes than the recipe needs (the launch runs on the first required_nodes)',
  scope: 'files',
  evidence:
    'These stacks run one rank per node (one GB10 GPU each); the eugr recipe says to bump tensor_parallel_size and ' +
    'required_nodes together for 3 nodes (recipes/deepseek-v4-flash-eugr-agent; docs/failures.md 6). `spark launch` refuses the ' +
    'same shapes, so preflight and launch agree.',
  fix: 'make tensor_parallel_size × pipeline_parallel_size equal required_nodes',
  check(ctx) {
    const out = ctx.shape.problems.map((p) =>
      finding(this, {
        message: p.message,
        where: p.flag ? whereArg(ctx, p.flag) : whereField(ctx, p.field),
        fix: p.fix,
      }),
    );
    const c = ctx.cluster;
    const place = ctx.placement;
    if (!c || !place) return out;
    for (const p of place.problems) {
      out.push(
        finding(this, {
          message: p.message,
          where: at(c.file, p.key === 'head' ? c.locate('head') : c.nodes.at(-1)?.line),
          fix: p.fix,
        }),
      );
    }
    if (place.idle.length > 0) {
      out.push(
        finding(this, {
          severity: 'warn',
          message:
            `the recipe needs ${ctx.world} node${ctx.world === 1 ? '' : 's'} and cluster ${c.name} has ${c.nodes.length}: ` +
            `the launch runs on ${place.nodes.map((n) => n.host).join(', ')} and leaves ${place.idle.map((n) => n.host).join(', ')} idle`,
          where: at(c.file, place.idle[0]!.line),
          fix: 'use a cluster file listing exactly the nodes to use, or a recipe for more nodes',
        }),
      );
    }
    return out;
  },
});

export const tpDivides = defineRule({
  id: 'parallel.tp-divides',
  title: 'TP divides the attention heads, hidden size and vocabulary of config.json',
  severity: 'error',
  scope: 'snapshot',
  evidence:
    'Heads 64, hidden 5120 and vocab 129280 are not divisible by 3; TP=3 needs the padding adapter ' +
    'adapter/tp3_pad.py (recipes/docker-images/mia-tp4/.env.example).',
  fix: 'use a TP that divides them (1, 2 or 4 for DeepSeek-V4), or an image with a padding adapter and --skip parallel.tp-divides',
  async check(ctx) {
    const config = await ctx.modelConfig();
    if (!config) return { skip: 'no config.json: pass --snapshot DIR (or --cluster with hf_cache)' };
    const tp = tensorParallel(ctx);
    const dims: [string, number | undefined][] = [
      ['num_attention_heads', config.numAttentionHeads],
      ['hidden_size', config.hiddenSize],
      ['vocab_size', config.vocabSize],
    ];
    const bad = dims.filter(([, v]) => v !== undefined && v % tp !== 0).map(([k, v]) => `${k} ${v}`);
    if (bad.length === 0) return [];
    return [
      finding(this, {
        message: `tensor_parallel_size ${tp} does not divide ${bad.join(', ')} (${config.path})`,
        where: whereField(ctx, 'tensorParallelSize'),
      }),
    ];
  },
});

/** SGLang's spellings of the expert-parallel size. */
export const EP_FLAGS = ['--ep-size', '--ep', '--expert-parallel-size'] as const;

export const epSize = defineRule({
  id: 'parallel.ep-size',
  title: "SGLang's expert-parallel size divides the tensor-parallel size",
  engines: ['sglang'],
  severity: 'error',
  scope: 'files',
  evidence:
    'SGLang places expert parallelism inside the TP group (each expert shard spans tp ÷ ep ranks) and refuses an ' +
    '--ep-size that does not divide --tp-size at start-up; the dsv41 recipe runs --ep-size 4 with TP 4, the mia-tp4 ' +
    'stack EP_SIZE 1 with TP 3 (recipes/dsv41-flash-4x-sglang-aiden16, recipes/docker-images/mia-tp4/.env.example).',
  fix: 'set --ep-size to a divisor of the TP size (1 or the TP size itself)',
  check(ctx) {
    const flag = EP_FLAGS.map((n) => ctx.args.get(n))
      .filter((f) => f !== undefined)
      .sort((a, b) => a.index - b.index)
      .at(-1);
    if (!flag) return [];
    const tp = tensorParallel(ctx);
    const ep = typeof flag.value === 'string' && /^\d+$/.test(flag.value.trim()) ? Number(flag.value) : undefined;
    if (ep === undefined || ep < 1) {
      return [
        finding(this, {
          message: `${flag.name} ${String(flag.value)} is not a whole number >= 1`,
          where: whereArg(ctx, flag),
        }),
      ];
    }
    if (ep <= tp && tp % ep === 0) return [];
    return [
      finding(this, {
        message: `${flag.name} ${ep} does not divide the TP size ${tp} (${ctx.shape.tpFrom === 'tensor_parallel_size' ? 'tensor_parallel_size' : ctx.shape.tpFrom === 'args' ? 'from args' : 'required_nodes'})`,
        where: whereArg(ctx, flag),
        fix: `set ${flag.name} to a divisor of ${tp} (${divisors(tp).join(', ')})`,
      }),
    ];
  },
});

function divisors(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i + 1).filter((d) => n % d === 0);
}

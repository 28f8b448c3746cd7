// CUDA graph sizes against the decode batch: a batch larger than the largest captured graph
// runs eagerly (slow), and vLLM with speculative decoding captures in multiples of k+1.
import type { ArgFlag, ParsedArgs } from '../../recipes/index.js';
import { defineRule, finding, whereArg, whereField } from '../../preflight-api/rule.js';

/** k, the number of speculative tokens, from vLLM's --speculative-config JSON. */
export function speculativeTokens(config: unknown): number | undefined {
  if (typeof config !== 'object' || config === null) return undefined;
  const k = (config as Record<string, unknown>).num_speculative_tokens;
  return typeof k === 'number' && Number.isInteger(k) && k > 0 ? k : undefined;
}

/**
 * The speculative-decoding flag and k, from the JSON value or vLLM's dotted form
 * (`--speculative-config.num_speculative_tokens 5`, which vLLM merges into the JSON; it wins).
 */
export function speculation(args: ParsedArgs): { flag: ArgFlag; k: number } | undefined {
  const dotted = args.get('--speculative-config.num_speculative_tokens');
  const text = dotted && typeof dotted.value === 'string' ? dotted.value.trim() : undefined;
  if (dotted && text !== undefined && /^\d+$/.test(text) && Number(text) > 0) return { flag: dotted, k: Number(text) };
  const json = args.get('--speculative-config');
  const k = speculativeTokens(args.json('--speculative-config'));
  return json && k !== undefined ? { flag: json, k } : undefined;
}

export const vllmCapture = defineRule({
  id: 'vllm.cudagraph-capture',
  title: '--max-cudagraph-capture-size = --max-num-seqs × (k+1) with k speculative tokens',
  engines: ['vllm'],
  severity: 'error',
  also:
    'warn when --max-num-seqs or the capture size is missing, or the capture size is not a multiple of k+1; ' +
    'info when it captures more than max_num_seqs × (k+1)',
  scope: 'files',
  evidence:
    'Each decode step of a sequence verifies k+1 tokens, so a full batch is max_num_seqs × (k+1) tokens; a smaller ' +
    'capture size runs those batches eagerly, and k=5 rejects --max-num-seqs 1 at boot (recipes/deepseek-v4-flash-eugr-agent, ' +
    '"the k+1 multiple rule": 6 × 6 = 36). k comes from the --speculative-config JSON or its dotted form ' +
    '(--speculative-config.num_speculative_tokens 5).',
  fix: 'set --max-cudagraph-capture-size to max_num_seqs × (k+1)',
  check(ctx) {
    const found = speculation(ctx.args);
    if (!found) return [];
    const { flag: spec, k } = found;
    const seqsFlag = ctx.args.get('--max-num-seqs');
    const seqs = ctx.args.number('--max-num-seqs');
    const capFlag = ctx.args.get('--max-cudagraph-capture-size');
    const cap = ctx.args.number('--max-cudagraph-capture-size');
    if (seqs === undefined || !seqsFlag) {
      return [
        finding(this, {
          severity: 'warn',
          message: `speculative decoding with k=${k} but no --max-num-seqs: the capture size cannot be checked against the engine default`,
          where: whereArg(ctx, spec),
          fix: `set --max-num-seqs and --max-cudagraph-capture-size = max_num_seqs × ${k + 1}`,
        }),
      ];
    }
    const want = seqs * (k + 1);
    if (seqs === 1 && k >= 5) {
      return [
        finding(this, {
          message: `--max-num-seqs 1 with k=${k} speculative tokens is rejected at boot`,
          where: whereArg(ctx, seqsFlag),
          fix: `use --max-num-seqs 2 or more (with --max-cudagraph-capture-size ${2 * (k + 1)})`,
        }),
      ];
    }
    if (cap === undefined || !capFlag) {
      return [
        finding(this, {
          severity: 'warn',
          message: `no --max-cudagraph-capture-size: with --max-num-seqs ${seqs} and k=${k} a full decode batch is ${want} tokens`,
          where: ctx.args.has('--max-num-seqs') ? whereArg(ctx, seqsFlag) : whereField(ctx, 'args'),
          fix: `add "--max-cudagraph-capture-size", "${want}"`,
        }),
      ];
    }
    if (cap < want) {
      return [
        finding(this, {
          message:
            `--max-cudagraph-capture-size ${cap} is below --max-num-seqs ${seqs} × (k+1 = ${k + 1}) = ${want}: ` +
            `decode batches of more than ${Math.floor(cap / (k + 1))} sequences run without CUDA graphs`,
          where: whereArg(ctx, capFlag),
          fix: `set --max-cudagraph-capture-size ${want} (or lower --max-num-seqs to ${Math.max(1, Math.floor(cap / (k + 1)))})`,
        }),
      ];
    }
    if (cap % (k + 1) !== 0) {
      return [
        finding(this, {
          severity: 'warn',
          message: `--max-cudagraph-capture-size ${cap} is not a multiple of k+1 = ${k + 1}`,
          where: whereArg(ctx, capFlag),
          fix: `set it to ${want}`,
        }),
      ];
    }
    if (cap > want) {
      return [
        finding(this, {
          severity: 'info',
          message: `--max-cudagraph-capture-size ${cap} captures graphs for batches above --max-num-seqs ${seqs} × ${k + 1} = ${want} that never run`,
          where: whereArg(ctx, capFlag),
          fix: `set it to ${want} to save graph memory`,
        }),
      ];
    }
    return [];
  },
});

export const sglangGraphBs = defineRule({
  id: 'sglang.cuda-graph-bs',
  title: 'SGLang captures CUDA graphs up to the number of running requests',
  engines: ['sglang'],
  severity: 'warn',
  scope: 'files',
  evidence:
    'A decode batch larger than the largest captured batch size runs eagerly; the dsv41 recipe pairs ' +
    '--max-running-requests 16 with --cuda-graph-max-bs-decode 16 (recipes/dsv41-flash-4x-sglang-aiden16).',
  fix: 'raise --cuda-graph-max-bs(-decode) to --max-running-requests, or lower --max-running-requests',
  check(ctx) {
    const running = ctx.args.number('--max-running-requests');
    const bsFlag = ctx.args.get('--cuda-graph-max-bs-decode') ?? ctx.args.get('--cuda-graph-max-bs');
    const bs = bsFlag && typeof bsFlag.value === 'string' ? Number(bsFlag.value) : undefined;
    if (running === undefined || bs === undefined || !bsFlag || !Number.isFinite(bs) || bs >= running) return [];
    return [
      finding(this, {
        message: `${bsFlag.name} ${bs} is below --max-running-requests ${running}: decode batches above ${bs} run without CUDA graphs`,
        where: whereArg(ctx, bsFlag),
        fix: `set ${bsFlag.name} ${running}`,
      }),
    ];
  },
});

// How a table's rows are split among the ranks (docs/engram-tables.md): SGLang's floor rule, the front
// rule, or vLLM's whole sub-tables (heads). The native tiling computes the ranges; the rule and
// the range are plain values every layer above it speaks of.
export type SplitRule = 'floor' | 'front' | 'heads';
export const SPLIT_RULES: readonly SplitRule[] = ['floor', 'front', 'heads'];

/** Half-open [start, end). */
export interface RowRange {
  start: number;
  end: number;
}

// The serving stacks' own row readers, which `spark bench gather` runs as baselines under each
// stack's name. Each stack's room says which reader is its original (stacks/registry.ts:
// `original`); the readers themselves are measuring code and live here: 'mmap' is the
// overlay's path (overlay-baseline.ts), 'mia-pool' the Mia stack's pool (mia-case.ts).
import { STACKS, type ServingStack } from '../stacks/registry.js';
import type { RowSourceKind } from '../stacks/row-source.js';

export type OriginalReader = NonNullable<ServingStack['original']>['reader'];

/** The stack whose original reader a variant runs, when the variant is a stack's name. */
export function originalOf(variant: string): ServingStack | undefined {
  return STACKS.find((s) => s.name === variant && s.original);
}

export function readerOf(variant: string): OriginalReader | undefined {
  return originalOf(variant)?.original?.reader;
}

/** The variants of the stacks whose own readers can read this kind of source. */
export function originalsReading(kind: RowSourceKind): string[] {
  return STACKS.filter((s) => s.original?.reads.includes(kind)).map((s) => s.name);
}

/** The layout the stack whose original is `reader` reads (its packs' layout). */
export function layoutReadBy(reader: OriginalReader): string | undefined {
  return STACKS.find((s) => s.original?.reader === reader)?.layout;
}

/** Among `variants`, the one that runs `reader`. */
export function variantWith(reader: OriginalReader, variants: readonly string[]): string | undefined {
  return variants.find((v) => readerOf(v) === reader);
}

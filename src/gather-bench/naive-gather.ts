// The naive baseline: what a first TypeScript version would do. One fs read per row piece
// (weight and scale for a snapshot, the whole row for a pack), all issued at once with
// Promise.all on libuv's thread pool, no sorting, no de-duplication.
import { packedRowOffset } from '../stacks/packed/packed-manifest.js';
import { open, type FileHandle } from 'node:fs/promises';
import type { TableSpec } from '../domain/table-spec.js';

export class NaiveGather {
  private constructor(
    private readonly spec: TableSpec,
    private readonly handles: Map<string, FileHandle>,
    private readonly scales: Buffer | undefined,
    /** First id whose scale row is scales[0] (a sparse copy holds only its range). */
    private readonly scalesFrom = 0,
  ) {}

  /** `residentScales`: read the table's scale tensor into memory first (the one-read variant). */
  static async open(spec: TableSpec, residentScales = false): Promise<NaiveGather> {
    const handles = new Map<string, FileHandle>();
    const paths = spec.kind === 'packed' ? [spec.path] : [spec.weight.path, spec.scale.path];
    for (const p of paths) if (!handles.has(p)) handles.set(p, await open(p, 'r'));
    let scales: Buffer | undefined;
    let from = 0;
    if (spec.kind === 'snapshot' && residentScales) {
      const [lo, hi] = (spec.range ?? [0, spec.rows]).map(Number);
      const sb = spec.dim / 32;
      scales = Buffer.allocUnsafe((hi - lo) * sb);
      await handles.get(spec.scale.path)!.read(scales, 0, scales.length, Number(spec.scale.offset) + lo * sb);
      from = lo;
    }
    return new NaiveGather(spec, handles, scales, from);
  }

  async gather(ids: readonly number[]): Promise<Buffer> {
    const s = this.spec;
    if (s.kind === 'packed') {
      const fh = this.handles.get(s.path)!;
      const rb = s.rowBytes;
      const place = { layout: s.layout, start: Number(s.start), dataOffset: Number(s.dataOffset), stride: s.stride };
      const out = Buffer.allocUnsafe(ids.length * rb);
      await Promise.all(ids.map((id, i) => fh.read(out, i * rb, rb, packedRowOffset(place, id))));
      return out;
    }
    const dim = s.dim;
    const sb = dim / 32;
    const rb = dim + sb;
    const w = this.handles.get(s.weight.path)!;
    const sc = this.handles.get(s.scale.path)!;
    const out = Buffer.allocUnsafe(ids.length * rb);
    const scales = this.scales;
    await Promise.all(
      ids.map((id, i) => {
        const weight = w.read(out, i * rb, dim, Number(s.weight.offset) + id * dim);
        if (scales) {
          const at = (id - this.scalesFrom) * sb;
          scales.copy(out, i * rb + dim, at, at + sb);
          return weight;
        }
        return Promise.all([weight, sc.read(out, i * rb + dim, sb, Number(s.scale.offset) + id * sb)]);
      }),
    );
    return out;
  }

  async close(): Promise<void> {
    for (const fh of this.handles.values()) await fh.close();
  }
}

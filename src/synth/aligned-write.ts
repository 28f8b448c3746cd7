// Writing a large byte range of a file at disk speed. Buffered writes of many GB copy every
// byte into the page cache, fill it with dirty pages that push out what the node keeps cached,
// and on small VMs spend more time in the kernel than the disk takes. So the range's 4 KiB
// aligned interior goes through a second, O_DIRECT descriptor of the same open file (reopened
// through /proc/self/fd, never through its path, which could have been replaced) from
// page-aligned memory; the unaligned edges go through the caller's descriptor. Where O_DIRECT
// is refused (tmpfs, some FUSE filesystems, no /proc), the whole range is written buffered.
import { closeSync, constants, openSync, writeSync } from 'node:fs';
import { RingWriter, WasmMemory, type RingFill } from './aligned-write-ring.js';

const BLOCK = 4096;
/** Bytes per direct write: large enough for the device to see deep, merged requests. */
export const DIRECT_CHUNK = 8 << 20;

/**
 * Page-aligned memory, as O_DIRECT needs: V8 maps WebAssembly memory on page boundaries,
 * while a Buffer's memory comes from malloc (16-byte aligned).
 */
export function alignedBuffer(bytes: number): Buffer {
  const pages = Math.max(1, Math.ceil(bytes / 65536));
  return Buffer.from(new WasmMemory({ initial: pages, maximum: pages }).buffer as ArrayBuffer, 0, bytes);
}

/** Interiors at least this large are written by the ring's writer threads, the rest inline. */
const RING_MIN = 64 << 20;

/** Fills `into` with the file's bytes at [at, at + into.length). */
export type Producer = (at: number, into: Buffer) => void;

function writeAll(fd: number, buf: Buffer, position: number): void {
  let done = 0;
  while (done < buf.length) done += writeSync(fd, buf, done, buf.length - done, position + done);
}

function openDirect(fd: number): number | undefined {
  const flag = (constants as Record<string, number>).O_DIRECT;
  if (flag === undefined) return undefined; // not Linux
  try {
    return openSync(`/proc/self/fd/${fd}`, constants.O_WRONLY | flag);
  } catch {
    return undefined;
  }
}

function writeBuffered(fd: number, from: number, to: number, produce: Producer, scratch: Buffer): void {
  for (let at = from; at < to; at += scratch.length) {
    const view = scratch.subarray(0, Math.min(scratch.length, to - at));
    produce(at, view);
    writeAll(fd, view, at);
  }
}

export interface RangeWritten {
  /** Bytes written through O_DIRECT (0 when the filesystem refused it). */
  directBytes: number;
}

/** How the interior is written (defaults suit GB ranges; tests use small ones). */
export interface RangeOptions {
  ringMin?: number;
  workers?: number;
  slotBytes?: number;
  /** Let the writer threads produce the interior's bytes themselves (see RingFill): `produce` must be what it builds. */
  fill?: RingFill;
  /** Told the bytes of each piece once it is handed to the disk (for progress). */
  onWritten?: (bytes: number) => void;
}

/** Writes [start, start + length) of the file open as `fd` with bytes from `produce`. */
export function writeRange(
  fd: number,
  start: number,
  length: number,
  produce: Producer,
  opts: RangeOptions = {},
): RangeWritten {
  const end = start + length;
  const a = Math.ceil(start / BLOCK) * BLOCK;
  const b = Math.max(a, Math.floor(end / BLOCK) * BLOCK);
  const direct = b - a >= BLOCK ? openDirect(fd) : undefined;
  const written = opts.onWritten ?? ((): void => {});
  if (direct === undefined) {
    writeBuffered(fd, start, end, produce, Buffer.allocUnsafe(Math.min(DIRECT_CHUNK, Math.max(1, length))));
    written(length);
    return { directBytes: 0 };
  }
  let directBytes = 0;
  try {
    const buf = alignedBuffer(Math.min(DIRECT_CHUNK, b - a));
    writeBuffered(fd, start, a, produce, buf);
    written(a - start);
    let at = a;
    // The first chunk inline: a filesystem that takes O_DIRECT opens but refuses its writes
    // (EINVAL) gets the whole range buffered instead.
    const first = buf.subarray(0, Math.min(buf.length, b - a));
    produce(at, first);
    try {
      writeAll(direct, first, at);
      directBytes += first.length;
      at += first.length;
      written(first.length);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EINVAL') throw err;
      writeBuffered(fd, a, end, produce, buf);
      written(end - a);
      return { directBytes: 0 };
    }
    if (b - at >= (opts.ringMin ?? RING_MIN)) {
      const ring = new RingWriter(direct, opts.workers, opts.slotBytes, opts.fill);
      try {
        for (; at < b;) {
          const slot = ring.next();
          const n = Math.min(ring.slotBytes, b - at);
          if (!opts.fill) produce(at, slot.subarray(0, n));
          ring.submit(at, n);
          at += n;
          directBytes += n;
          written(n);
        }
        ring.finish();
      } finally {
        ring.close();
      }
    }
    for (; at < b; at += buf.length) {
      const view = buf.subarray(0, Math.min(buf.length, b - at));
      produce(at, view);
      writeAll(direct, view, at);
      directBytes += view.length;
      written(view.length);
    }
    writeBuffered(fd, b, end, produce, buf);
    written(end - b);
  } finally {
    closeSync(direct);
  }
  return { directBytes };
}

// The writer ring of aligned-write.ts: K slots of page-aligned shared memory, W writer threads
// (aligned-write-worker.ts). Either the main thread fills slot j mod K while writers put
// earlier slots on disk with O_DIRECT, or (with a `fill` module) each writer fills its own
// slots too, so producing the bytes runs on W threads. Either way W large writes are in
// flight. Job j belongs to writer j mod W, so each slot has one writer and one filler and a
// slot's state (FREE -> FULL -> FREE) is all the coordination there is.
import { Worker } from 'node:worker_threads';

/** A slot's state in the control array: FREE to fill, FULL to write, STOP for its writer to end. */
export const Slot = { FREE: 0, FULL: 1, STOP: 2 } as const;

/** What a writer thread receives. The control array holds one state per slot, then an error flag, then the claim on the error message. */
export interface RingShared {
  fd: number;
  memory: SharedArrayBuffer;
  control: SharedArrayBuffer;
  positions: SharedArrayBuffer;
  lengths: SharedArrayBuffer;
  error: SharedArrayBuffer;
  slots: number;
  slotBytes: number;
  workers: number;
  worker: number;
  fill?: RingFill;
}

/**
 * A producer the writer threads build for themselves: `module`'s export `name` called with
 * `args` returns a function (at, into) that fills `into` with the file's bytes at `at`.
 */
export interface RingFill {
  module: string;
  name: string;
  args: unknown[];
}

// The DOM lib's WebAssembly types are not in this project's lib set; Node has the global.
type WasmMemory = new (d: { initial: number; maximum: number; shared?: boolean }) => {
  buffer: ArrayBuffer | SharedArrayBuffer;
};
export const WasmMemory = (globalThis as unknown as { WebAssembly: { Memory: WasmMemory } }).WebAssembly.Memory;

export class RingWriter {
  readonly slotBytes: number;
  private readonly shared: Omit<RingShared, 'worker'>;
  private readonly state: Int32Array;
  private readonly threads: Worker[];
  private job = 0;

  /** `fd` is an O_DIRECT descriptor; slot memory is page aligned (V8 maps WebAssembly memory on pages). */
  constructor(fd: number, workers = 4, slotBytes = 4 << 20, fill?: RingFill) {
    const slots = 2 * workers;
    const pages = Math.ceil((slots * slotBytes) / 65536);
    const memory = new WasmMemory({ initial: pages, maximum: pages, shared: true }).buffer as SharedArrayBuffer;
    this.slotBytes = slotBytes;
    this.shared = {
      fd,
      memory,
      control: new SharedArrayBuffer(4 * (slots + 2)),
      positions: new SharedArrayBuffer(8 * slots),
      lengths: new SharedArrayBuffer(4 * slots),
      error: new SharedArrayBuffer(512),
      slots,
      slotBytes,
      workers,
      ...(fill ? { fill } : {}),
    };
    this.state = new Int32Array(this.shared.control);
    this.threads = Array.from({ length: workers }, (_, worker) => {
      const t = new Worker(new URL('./aligned-write-worker.js', import.meta.url), {
        workerData: { ...this.shared, worker },
      });
      t.unref();
      return t;
    });
  }

  private slot(): number {
    return this.job % this.shared.slots;
  }

  private waitFree(slot: number): void {
    while (Atomics.load(this.state, slot) !== Slot.FREE) {
      this.throwIfFailed();
      Atomics.wait(this.state, slot, Slot.FULL, 100);
    }
    this.throwIfFailed();
  }

  private throwIfFailed(): void {
    if (Atomics.load(this.state, this.shared.slots) === 0) return;
    const text = Buffer.from(this.shared.error).toString('utf8').replace(/\0+$/, '');
    const [code, ...rest] = text.split(' ');
    throw Object.assign(new Error(rest.join(' ') || 'a direct write failed'), { code });
  }

  /** The next slot's memory, once a writer has freed it. */
  next(): Buffer {
    const slot = this.slot();
    this.waitFree(slot);
    return Buffer.from(this.shared.memory, slot * this.slotBytes, this.slotBytes);
  }

  /** Hands the slot returned by next() (or, with `fill`, a free slot) to its writer: `length` bytes at file `position`. */
  submit(position: number, length: number): void {
    const slot = this.slot();
    new Float64Array(this.shared.positions)[slot] = position;
    new Int32Array(this.shared.lengths)[slot] = length;
    Atomics.store(this.state, slot, Slot.FULL);
    Atomics.notify(this.state, slot);
    this.job++;
  }

  /** Waits for every submitted write; throws the first writer's error. */
  finish(): void {
    for (let s = 0; s < this.shared.slots; s++) this.waitFree(s);
  }

  /** Stops the writers (each waits on the slot of its next job). */
  close(): void {
    for (let s = 0; s < this.shared.slots; s++) {
      Atomics.store(this.state, s, Slot.STOP);
      Atomics.notify(this.state, s);
    }
    for (const t of this.threads) void t.terminate();
  }
}

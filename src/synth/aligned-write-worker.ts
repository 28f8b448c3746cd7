// A writer thread of aligned-write-ring.ts: takes jobs w, w + W, w + 2W, ... (job j in slot
// j mod K), fills the slot when the ring has a `fill` producer, writes the slot's bytes to the
// O_DIRECT descriptor, frees the slot.
import { writeSync } from 'node:fs';
import { workerData } from 'node:worker_threads';
import { Slot, type RingShared } from './aligned-write-ring.js';

const d = workerData as RingShared;
const state = new Int32Array(d.control);
const positions = new Float64Array(d.positions);
const lengths = new Int32Array(d.lengths);
type Produce = (at: number, into: Buffer) => void;
const produce = d.fill
  ? ((await import(d.fill.module)) as Record<string, (...a: unknown[]) => Produce>)[d.fill.name](...d.fill.args)
  : undefined;

for (let j = d.worker; Atomics.load(state, d.slots) === 0; j += d.workers) {
  const slot = j % d.slots;
  Atomics.wait(state, slot, Slot.FREE);
  if (Atomics.load(state, slot) === Slot.STOP) break;
  try {
    const view = Buffer.from(d.memory, slot * d.slotBytes, lengths[slot]);
    produce?.(positions[slot], view);
    let done = 0;
    while (done < view.length) done += writeSync(d.fd, view, done, view.length - done, positions[slot] + done);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    // The first failure is the one reported; the main thread throws it.
    if (Atomics.compareExchange(state, d.slots + 1, 0, 1) === 0) {
      Buffer.from(d.error).write(`${e.code ?? 'EIO'} ${e.message}`, 'utf8');
      Atomics.store(state, d.slots, 1);
    }
  }
  Atomics.store(state, slot, Slot.FREE);
  Atomics.notify(state, slot);
}

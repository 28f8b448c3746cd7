// Progress on stderr. On a terminal, one line that each update rewrites (done() ends it so the
// report starts on a fresh line); elsewhere (a log, ssh under `spark fanout`), whole lines at
// most every few seconds.
import type { Io } from '../io.js';

export interface ProgressLine {
  update(text: string): void;
  done(): void;
}

export function progressLine(io: Io): ProgressLine {
  let shown = false;
  return {
    update(text: string) {
      io.stderr(`\r${text}\x1b[K`);
      shown = true;
    },
    done() {
      if (shown) io.stderr('\r\x1b[K');
      shown = false;
    },
  };
}

/** Whole lines: the first update, then at most one every `seconds`, and the last one at done(). */
export function progressLog(io: Io, seconds: number): ProgressLine {
  let last = -Infinity;
  let pending: string | undefined;
  return {
    update(text: string) {
      const now = performance.now();
      if (now - last < seconds * 1000) {
        pending = text;
        return;
      }
      last = now;
      pending = undefined;
      io.stderr(`${text}\n`);
    },
    done() {
      if (pending !== undefined) io.stderr(`${pending}\n`);
      pending = undefined;
    },
  };
}

// Progress on stderr. On a terminal, one line that each update rewrites (done() ends it so the
// report starts on a fresh line); elsewhere (a log, ssh under `spark fanout`), whole lines at
// most every few seconds.
import type { Io } from '../terminal/io.js';
import { formatBytes } from '../terminal/format.js';

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

/** `m:ss` for an ETA. */
function clock(seconds: number): string {
  return `${Math.floor(seconds / 60)}:${String(Math.floor(seconds % 60)).padStart(2, '0')}`;
}

/**
 * The one progress text of a long transfer: `label: 1.2 GiB / 4.0 GiB 30%  410 MiB/s  ETA 0:07`.
 * `moved` is what this run itself moved (a resumed pack has bytes done before it started), the
 * base of the rate; the rate and ETA appear once half a second has passed.
 */
export function transferText(
  label: string,
  p: { bytesDone: number; bytesTotal: number; seconds: number; moved?: number },
): string {
  const pct = p.bytesTotal > 0 ? Math.floor((100 * p.bytesDone) / p.bytesTotal) : 100;
  const rate = p.seconds > 0.5 ? (p.moved ?? p.bytesDone) / p.seconds : 0;
  const eta = rate > 0 ? Math.max(0, (p.bytesTotal - p.bytesDone) / rate) : undefined;
  return (
    `${label}: ${formatBytes(p.bytesDone)} / ${formatBytes(p.bytesTotal)} ${pct}%` +
    (rate > 0 ? `  ${formatBytes(rate)}/s` : '') +
    (eta !== undefined ? `  ETA ${clock(eta)}` : '')
  );
}

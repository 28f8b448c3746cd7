// A one-line progress display on stderr, for terminals only (callers check io.stderrIsTTY):
// each update rewrites the line; done() ends it so the report starts on a fresh line.
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

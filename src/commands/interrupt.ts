// Ctrl-C (or SIGTERM) during a long write: say what survives and how to go on, then end by the
// same signal. Ending by the signal, not by exit(3), is what shells and supervisors expect:
// the status is 128 + signal (130 for Ctrl-C), and a shell loop running the command stops
// instead of going on to the next iteration. The work itself needs no cleanup: every write is
// journaled, so a killed run resumes (what `kill -9` already relies on).
import { toJson, type Io } from '../terminal/io.js';

const SIGNALS = ['SIGINT', 'SIGTERM'] as const;

/**
 * Until the returned function is called, SIGINT and SIGTERM print `message` (one line, or the
 * `{"error": {"code": "E_INTERRUPTED", …}}` object with --json) and re-raise the signal.
 */
export function reportInterrupt(io: Io, json: boolean, command: string, message: string): () => void {
  const handlers = SIGNALS.map((signal) => {
    const handler = (): void => {
      dispose();
      // End a progress line the terminal is showing before the message.
      const lead = io.stderrIsTTY ? '\r\x1b[K' : '';
      io.stderr(
        lead +
          (json ? toJson({ error: { code: 'E_INTERRUPTED', message, signal } }, 0) : `spark ${command}: ${message}`) +
          '\n',
      );
      process.kill(process.pid, signal);
    };
    process.once(signal, handler);
    return [signal, handler] as const;
  });
  function dispose(): void {
    for (const [signal, handler] of handlers) process.removeListener(signal, handler);
  }
  return dispose;
}

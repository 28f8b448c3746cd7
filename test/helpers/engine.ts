// Fake engines for wrapper tests: small sh scripts that record what they were started with.
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from './tmp.js';

/**
 * Writes to $RECORD: its pid, each argv entry on its own line, the two variables the wrapper
 * sets, its ignored and blocked signal masks and stdin's first line; exits with $EXIT_CODE.
 */
export function recordingEngine(): { path: string; record: string } {
  const dir = tempDir('spark-engine-');
  const path = join(dir, 'engine.sh');
  const record = join(dir, 'record.txt');
  writeFileSync(
    path,
    `#!/bin/sh
{
  echo "pid=$$"
  for a in "$@"; do echo "arg=$a"; done
  echo "rows=\${SPARK_ENGRAM_ROWS-unset}"
  echo "gid=\${B12X_ROCE_GID_INDEX-unset}"
  grep -E '^Sig(Ign|Blk)' /proc/self/status
  read -r line || line=none
  echo "stdin=$line"
} > "$RECORD"
echo "engine stdout"
echo "engine stderr" >&2
exit "\${EXIT_CODE:-0}"
`,
  );
  chmodSync(path, 0o755);
  return { path, record };
}

/** Writes "ready" to $READY, then waits; on SIGTERM writes "term" to $READY and exits 143. */
export function trappingEngine(): string {
  const path = join(tempDir('spark-engine-'), 'engine.sh');
  writeFileSync(
    path,
    `#!/bin/sh
trap 'echo term >> "$READY"; exit 143' TERM
echo ready > "$READY"
while :; do sleep 0.05; done
`,
  );
  chmodSync(path, 0o755);
  return path;
}

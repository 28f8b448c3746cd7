// The bed's container image, built here from a root filesystem tarball (no registry): a static
// busybox and a fake engine. The engine prints the arguments and environment it was given
// (the test reads them back with `docker logs`), serves /health over HTTP on the --port the
// launcher appends (rank 0 only, as SGLang and vLLM do) and exits 0 on SIGTERM.
import { chmodSync, mkdirSync, symlinkSync, writeFileSync, copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { run } from './processes.js';

export const IMAGE = 'spark-bed/engine:1';
export const ENGINE = '/engine';

/**
 * Knobs, read from the container's environment (a recipe's [env] or a node's [nodes.env]):
 *   FAKE_ENGINE_EXIT=N            print a few lines, then exit N at start
 *   FAKE_ENGINE_HEALTHY_AFTER=S   /health answers 404 for S seconds first; `never`: always 404
 *   FAKE_ENGINE_STATS=LINE        once started (on the head once healthy), print LINE to stderr,
 *                                 as an engine library prints its stats line
 */
const ENGINE_SCRIPT = `#!/bin/sh
echo "fake-engine: started with $# argument(s)"
for a in "$@"; do printf 'fake-engine arg: %s\\n' "$a"; done
env | sort | sed 's/^/fake-engine env: /'
if [ -n "$FAKE_ENGINE_EXIT" ]; then
  echo "fake-engine: cannot open the model (asked to fail)"
  echo "fake-engine: exiting with status $FAKE_ENGINE_EXIT"
  exit "$FAKE_ENGINE_EXIT"
fi
port=; rank=; prev=
for a in "$@"; do
  [ "$prev" = --port ] && port=$a
  [ "$prev" = --node-rank ] && rank=$a
  prev=$a
done
httpd=
trap 'echo "fake-engine: SIGTERM, exiting"; [ -n "$httpd" ] && kill "$httpd"; exit 0' TERM INT
if [ "$rank" = 0 ] && [ -n "$port" ]; then
  mkdir -p /tmp/www
  httpd -f -p "0.0.0.0:$port" -h /tmp/www & httpd=$!
  echo "fake-engine: listening on port $port"
  after=\${FAKE_ENGINE_HEALTHY_AFTER:-0}
  if [ "$after" != never ]; then
    sleep "$after" & wait $!
    echo ok > /tmp/www/health
    echo "fake-engine: ready"
  fi
fi
[ -n "$FAKE_ENGINE_STATS" ] && echo "$FAKE_ENGINE_STATS" >&2
while :; do sleep 1 & wait $!; done
`;

/** Writes the root filesystem and returns the tarball's path. */
export function buildRootfsTarball(dir: string): string {
  const root = join(dir, 'rootfs');
  for (const d of ['bin', 'tmp', 'etc', 'proc', 'sys', 'dev', 'root']) mkdirSync(join(root, d), { recursive: true });
  copyFileSync('/bin/busybox', join(root, 'bin', 'busybox'));
  chmodSync(join(root, 'bin', 'busybox'), 0o755);
  for (const applet of run(['/bin/busybox', '--list']).split('\n')) {
    if (applet !== '' && applet !== 'busybox') symlinkSync('busybox', join(root, 'bin', applet));
  }
  writeFileSync(join(root, ENGINE.slice(1)), ENGINE_SCRIPT, { mode: 0o755 });
  const tarball = join(dir, 'rootfs.tar');
  run(['tar', '-C', root, '-cf', tarball, '.']);
  return tarball;
}

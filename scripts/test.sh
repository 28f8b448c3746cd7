#!/usr/bin/env bash
# npm test: the TypeScript build, lint, the C++ tests and the node tests, failing on the first
# step that fails. The C++ tests (native/test/run.sh: mostly compiling) run beside the build and
# lint, whose tsc and checkers leave a core idle much of the time; their output is printed whole
# once the two are done, so every step's output still reads in this order.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
native_log=$(mktemp)
bash native/test/run.sh >"$native_log" 2>&1 &
native=$!
trap 'kill "$native" 2>/dev/null; rm -f "$native_log"' EXIT
step() {
  echo "> $*"
  "$@" || {
    echo "npm test: '$*' failed" >&2
    exit 1
  }
}
step npm run build:ts
step npm run lint
echo "> bash native/test/run.sh"
wait "$native"
native_status=$?
cat "$native_log"
[ "$native_status" = 0 ] || {
  echo "npm test: 'bash native/test/run.sh' failed" >&2
  exit 1
}
step npm run test:node

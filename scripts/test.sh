#!/usr/bin/env bash
# npm test: the TypeScript build, then the node tests, with lint and the C++ tests beside them;
# exits 1 if any of the four failed. Lint and the C++ tests (native/test/run.sh: mostly
# compiling) need nothing the build makes, so they start at once and fill the cores that tsc and
# the node tests leave idle; their output is printed whole after the node tests', lint's first.
# A failed build stops the run: the node tests run the built JavaScript.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
logs=$(mktemp -d)
bash native/test/run.sh >"$logs/native" 2>&1 &
native=$!
npm run lint >"$logs/lint" 2>&1 &
lint=$!
trap 'kill "$native" "$lint" 2>/dev/null; rm -rf "$logs"' EXIT
echo "> npm run build:ts"
npm run build:ts || {
  echo "npm test: 'npm run build:ts' failed" >&2
  exit 1
}
failed=()
echo "> npm run test:node"
npm run test:node || failed+=("npm run test:node")
# after NAME PID LOG: waits for the step started beside the others and prints its output.
after() {
  echo "> $1"
  wait "$2" || failed+=("$1")
  cat "$3"
}
after "npm run lint" "$lint" "$logs/lint"
after "bash native/test/run.sh" "$native" "$logs/native"
for step in "${failed[@]}"; do echo "npm test: '$step' failed" >&2; done
[ "${#failed[@]}" -eq 0 ]

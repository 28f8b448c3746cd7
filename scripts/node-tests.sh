#!/bin/sh
# The node tests of npm test: every dist/test/**/*.test.js except the long trials (test/long,
# npm run test:long), the cluster bed (test/cluster, npm run test:cluster) and the arm64
# bundle's test (test/arm64, npm run test:arm64). Node 20's `node --test` does not expand
# globs itself, hence the list. Needs the TypeScript built (npm run build:ts).
#   sh scripts/node-tests.sh [NODE-TEST-OPTION...]   runs them, two files at a time
#   sh scripts/node-tests.sh --list                  prints them, one per line
set -eu
cd "$(dirname "$0")/.."
files=$(find dist/test -name '*.test.js' \
  ! -path 'dist/test/long/*' ! -path 'dist/test/cluster/*' ! -path 'dist/test/arm64/*' | LC_ALL=C sort)
if [ -z "$files" ]; then
  echo "node-tests: no test files in dist/test (npm run build:ts?)" >&2
  exit 1
fi
if [ "${1-}" = --list ]; then
  printf '%s\n' "$files"
  exit 0
fi
# The paths are ours (no blanks): word splitting makes them the arguments.
# shellcheck disable=SC2086
exec node --test --test-concurrency=2 "$@" $files

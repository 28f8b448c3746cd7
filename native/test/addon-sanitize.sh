#!/usr/bin/env bash
# Runs the row store's node tests against the addon built with ASan + UBSan, the sanitizer
# runtimes preloaded into node, then rebuilds the normal addon.
#   bash native/test/addon-sanitize.sh [dist/test/x.test.js ...]
set -euo pipefail
cd "$(dirname "$0")/../.."
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(dist/test/row-store.test.js dist/test/rows.test.js)
SPARK_SANITIZE=1 npm run build:native >/dev/null
rc=0
LD_PRELOAD="$(g++ -print-file-name=libasan.so) $(g++ -print-file-name=libubsan.so)" \
  UBSAN_OPTIONS=halt_on_error=1 node --test --test-concurrency=1 "${tests[@]}" || rc=$?
npm run build:native >/dev/null
exit $rc

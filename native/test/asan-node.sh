#!/usr/bin/env bash
# Runs the node tests once against an AddressSanitizer + UBSan build of the addon.
#   bash native/test/asan-node.sh
# The sanitized addon is built in a scratch copy of the package (addon-copy.sh), so
# build/Release stays the normal build. The tests load it through SPARK_ADDON_PATH (see
# src/native/index.ts), and the overlay bench baseline's module, built beside it, through
# SPARK_OVERLAY_BASELINE_PATH (src/native/overlay-baseline.ts). Node itself is not
# instrumented, so the ASan runtime must be preloaded; leak detection is off because V8 keeps
# memory alive until exit by design.
# Needs the TypeScript built (npm run build:ts, which npm test does first).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cxx=${CXX:-g++}
work=$(mktemp -d "${TMPDIR:-/tmp}/spark-asan-XXXXXX")
trap 'rm -rf "$work"' EXIT

. "$root/native/test/addon-copy.sh"
CXX="$cxx" SPARK_SANITIZE=1 build_addon_copy "$root" "$work"
addon="$work/build/Release/spark.node"
# The sanitized addon must really be sanitized, or this run proves nothing. (ldd's output is
# read whole: with pipefail, `ldd | grep -q` fails when grep exits before ldd has written all.)
libs=$(ldd "$addon")
if ! grep -q libasan <<<"$libs"; then
  echo "asan-node: $addon is not linked against libasan" >&2
  exit 1
fi
runtime=$("$cxx" -print-file-name=libasan.so)
if [ ! -e "$runtime" ]; then
  echo "asan-node: no ASan runtime for $cxx (install its libasan package)" >&2
  exit 1
fi

ls "$root"/dist/test/*.test.js >/dev/null
cd "$root"
LD_PRELOAD="$runtime" \
  ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:halt_on_error=1" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
  SPARK_ADDON_PATH="$addon" \
  SPARK_OVERLAY_BASELINE_PATH="$work/build/Release/overlay_mmap_baseline.so" \
  node --test --test-concurrency=2 dist/test/*.test.js

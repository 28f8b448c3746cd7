#!/usr/bin/env bash
# Runs the node tests of the addon's surface against an AddressSanitizer + UBSan build of it.
#   bash native/test/asan-node.sh
# The sanitized addon is built in a scratch copy of the package (addon-copy.sh), so
# build/Release stays the normal build. The tests load it through SPARK_ADDON_PATH (see
# src/addon/index.ts), and the overlay bench baseline's module, built beside it, through
# SPARK_OVERLAY_BASELINE_PATH (src/gather-bench/overlay-baseline.ts). Node itself is not
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

cd "$root"
# The test files of the addon's surface: the row store and its engines, safetensors, packs and
# verify in every layout, rows, synth, tiling and the bench's gathers, with the files that feed
# them hostile or limit-sized input. The other files (launch, preflight, recipes, sh programs,
# cluster operations, the docs' checks, the Python and ctypes readers) call the addon only to
# write a small synthetic snapshot, which synth's own tests cover, so they are left to npm test:
# under the preloaded runtime every process they start (sh, the ssh and docker fakes, python)
# is slower, and the whole suite took most of an hour on 2 cores.
surface='/(aligned-write|bench-gather|engram-ranges-snapshot|hostile-files|input-limits|layer-source|manifest-grammar|mia-baseline|native-layout|pack[a-z-]*|row-store[a-z-]*|rows|safetensors|snapshot|sparse-[a-z]+|synth|tiling)\.test\.js$'
files=()
while read -r f; do
  if [[ $f =~ $surface ]]; then files+=("$f"); fi
done < <(sh scripts/node-tests.sh --list)
if [ "${#files[@]}" -lt 20 ]; then
  echo "asan-node: only ${#files[@]} test files of the addon's surface in dist/test (npm run build:ts?)" >&2
  exit 1
fi
echo "asan-node: ${#files[@]} test files of the addon's surface"
LD_PRELOAD="$runtime" \
  ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:halt_on_error=1" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
  SPARK_ADDON_PATH="$addon" \
  SPARK_OVERLAY_BASELINE_PATH="$work/build/Release/overlay_mmap_baseline.so" \
  node --test --test-concurrency=2 "${files[@]}"

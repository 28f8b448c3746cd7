#!/usr/bin/env bash
# npm run test:arm64: the native code built for aarch64 (every DGX Spark node) on this machine.
#   1. the addon cross-built from binding.gyp (spark_core + the binding) with
#      aarch64-linux-gnu-g++ against this node's Node-API headers, and checked to be an
#      aarch64 shared object whose only unresolved symbols are Node-API's and versioned
#      libc/libstdc++ ones (a core source missing from the build would show up here);
#   2. the engine libraries of the same build (libengram_rows.so, librow_store.so) checked to
#      load in the stacks' aarch64 images (native/engine-libs/check-lib.sh: exactly the ABI's
#      symbols, only the C library needed, glibc <= 2.35);
#   3. every C++ unit test cross-compiled and run under qemu-aarch64 (run.sh --arm64), the
#      CRC-32 tests once on the CRC extension and once on the portable fallback;
#      both are kept in build/arm64 for the preflight tests of aarch64 nodes;
#   4. the Mia bench baseline (bench/baselines/mia-row-store) from the same build: aarch64,
#      its six symbols, nothing of Node's; its unit test runs under qemu with the others;
#   5. the arm64 bundle (spark bundle --arch arm64) checked by test/arm64/.
# Needs Debian's g++-aarch64-linux-gnu and qemu-user. Ends with "N passed, M failed".
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
prefix=${ARM64_PREFIX:-aarch64-linux-gnu-}

for tool in "${prefix}gcc" "${prefix}g++" "${prefix}ar" "${prefix}readelf" qemu-aarch64; do
  command -v "$tool" >/dev/null || {
    echo "arm64: $tool not found; install the cross tools: apt-get install g++-aarch64-linux-gnu qemu-user" >&2
    exit 3
  }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/spark-arm64-XXXXXX")
trap 'rm -rf "$work"' EXIT
. "$here/addon-copy.sh"

echo "== addon, cross-built for arm64"
CC="${prefix}gcc" CXX="${prefix}g++" LINK="${prefix}g++" AR="${prefix}ar" \
  build_addon_copy "$root" "$work" --arch=arm64
addon="$work/build/Release/spark.node"
header=$("${prefix}readelf" -h "$addon")
grep -Eq 'Type: +DYN' <<<"$header" && grep -Eq 'Machine: +AArch64' <<<"$header" || {
  echo "arm64: $addon is not an aarch64 shared object:" >&2
  echo "$header" >&2
  exit 1
}
# Undefined dynamic symbols (not weak ones): Node-API's come from node at load time,
# versioned ones from libc/libstdc++/libgcc; anything else would fail only when the addon
# first calls it.
undefined=$("${prefix}readelf" --dyn-syms -W "$addon" | awk '$7 == "UND" && $5 == "GLOBAL" && $8 != "" { print $8 }' | sort -u)
stray=$(grep -Ev '^(napi_|node_api_)|@' <<<"$undefined" || true)
if [ -n "$stray" ]; then
  echo "arm64: spark.node leaves symbols unresolved that node does not provide (a source missing from binding.gyp?):" >&2
  echo "$stray" >&2
  exit 1
fi
echo "spark.node: aarch64 shared object, $(grep -c '^napi_' <<<"$undefined") Node-API imports, no other unresolved symbols"
# The Mia bench baseline (bench/baselines/mia-row-store), built by the same binding.gyp: an
# aarch64 library with the stack's six symbols and nothing of Node's, and its driver.
mia="$work/build/Release/libmia_row_store_baseline.so"
grep -Eq 'Machine: +AArch64' <<<"$("${prefix}readelf" -h "$mia")" && grep -Eq 'Machine: +AArch64' <<<"$("${prefix}readelf" -h "$work/build/Release/mia_row_store_bench")" || {
  echo "arm64: the Mia baseline or its driver is not aarch64" >&2
  exit 1
}
mia_syms=$("${prefix}readelf" --dyn-syms -W "$mia")
if grep -Eq 'napi_|node_api_' <<<"$mia_syms" || [ "$(grep -Ec ' row_store_(open|range|attach_packed|lookup|stats|close)$' <<<"$mia_syms")" -ne 6 ]; then
  echo "arm64: $mia must export the six row_store_* symbols and import nothing of Node's" >&2
  exit 1
fi
echo "libmia_row_store_baseline.so: aarch64 shared object, the six row_store_* symbols, no Node-API imports"

# Each serving stack's library, as the registry lists them (src/stacks/registry.ts, built to dist/).
registered=$(cd "$root" && node --input-type=module -e \
  "const r = await import('./dist/src/stacks/registry.js'); for (const s of r.STACKS) console.log(s.name + ':' + s.libraryFile)") || {
  echo "arm64: the stacks' registry is not built: run npm run build:ts" >&2
  exit 1
}
mapfile -t libs <<<"$registered"
for lib in "${libs[@]}"; do
  READELF="${prefix}readelf" bash "$root/native/engine-libs/check-lib.sh" "$work/build/Release/${lib#*:}" "${lib%%:*}" aarch64
done
# Kept in build/arm64 (each written beside and renamed over): the aarch64 libraries the
# preflight tests mount on fake aarch64 nodes (test/preflight/preflight-engine-lib.test.ts).
mkdir -p "$root/build/arm64"
for lib in "${libs[@]#*:}"; do
  cp "$work/build/Release/$lib" "$root/build/arm64/.$lib.partial"
  mv -f "$root/build/arm64/.$lib.partial" "$root/build/arm64/$lib"
done

# node_tests LABEL FILE...: node tests that skip where no aarch64 build exists (a plain npm
# test); here one does, so they must run and pass, and a skip is a failure.
node_tests() {
  local label=$1 out
  shift
  out=$(cd "$root" && node --test "$@" 2>&1) || {
    echo "$out" >&2
    echo "arm64: $label failed" >&2
    exit 1
  }
  grep -q '^# skipped 0$' <<<"$out" || {
    grep -E '^# (pass|fail|skipped)|# SKIP' <<<"$out" >&2
    echo "arm64: $label skipped with the aarch64 build there" >&2
    exit 1
  }
  echo "$label: $(grep -E '^# pass' <<<"$out")"
}
if [ ! -d "$root/dist/test" ]; then
  echo "arm64: dist/test is missing (npm run build:ts) for the aarch64 node tests" >&2
  exit 1
fi
node_tests "the preflight and ELF-reader tests on the aarch64 libraries" \
  dist/test/preflight/preflight-engine-lib.test.js dist/test/engine-lib/engine-lib-reader.test.js
# 5. spark bundle --arch arm64: the file `spark fanout install` puts on the nodes, cross-built
#    by spark itself; its addon and libraries aarch64 with glibc <= 2.35, every file as its
#    manifest says, and node-gyp-build resolving the prebuild as a linux-arm64 node would.
node_tests "the arm64 bundle's test" dist/test/arm64/*.test.js

# Not exec: the EXIT trap above removes the scratch build once the tests end.
bash "$here/run.sh" --arm64

#!/usr/bin/env bash
# Builds and runs the standalone C++ unit tests (no Node involved).
#   bash native/test/run.sh              plain build (-O2)
#   bash native/test/run.sh --sanitize   AddressSanitizer + UndefinedBehaviorSanitizer
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
native=$(dirname "$here")
cxx=${CXX:-g++}
flags=(-std=c++20 -Wall -Wextra -Werror -pthread -D_FILE_OFFSET_BITS=64 -I"$native")
out="$here/build/plain"
if [ "${1:-}" = "--sanitize" ]; then
  flags+=(-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  out="$here/build/sanitize"
else
  flags+=(-O2)
fi
mkdir -p "$out"
core_sources=("$native"/core/*.cc)
fail=0
for t in "$here"/*_test.cc; do
  name=$(basename "$t" .cc)
  "$cxx" "${flags[@]}" "$t" "${core_sources[@]}" -o "$out/$name"
  if "$out/$name"; then :; else fail=1; fi
done
exit $fail

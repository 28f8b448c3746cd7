#!/usr/bin/env bash
# Builds and runs the standalone C++ unit tests (no Node involved).
#   bash native/test/run.sh              plain build (-O2)
#   bash native/test/run.sh --sanitize   AddressSanitizer + UndefinedBehaviorSanitizer
#   bash native/test/run.sh --tsan       ThreadSanitizer, on the tests that race threads
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
native=$(dirname "$here")
cxx=${CXX:-g++}
flags=(-std=c++20 -Wall -Wextra -Werror -pthread -D_FILE_OFFSET_BITS=64 -I"$native")
tests=("$here"/*_test.cc)
case "${1:-}" in
  --sanitize)
    flags+=(-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
    out="$here/build/sanitize"
    ;;
  --tsan)
    flags+=(-O1 -g -fsanitize=thread)
    out="$here/build/tsan"
    tests=("$here"/thread_pool_test.cc "$here"/row_store_io_test.cc)
    export TSAN_OPTIONS="halt_on_error=1"
    ;;
  *)
    flags+=(-O2)
    out="$here/build/plain"
    ;;
esac
mkdir -p "$out"
core_sources=("$native"/core/*.cc)
fail=0
for t in "${tests[@]}"; do
  name=$(basename "$t" .cc)
  "$cxx" "${flags[@]}" "$t" "${core_sources[@]}" -o "$out/$name"
  if "$out/$name"; then :; else fail=1; fi
done
exit $fail

#!/usr/bin/env bash
# Builds and runs the standalone C++ unit tests (no Node involved).
#   bash native/test/run.sh              plain build (-O2)
#   bash native/test/run.sh --sanitize   AddressSanitizer + UndefinedBehaviorSanitizer
#   bash native/test/run.sh --tsan       ThreadSanitizer, on the tests that race threads
#   bash native/test/run.sh --arm64      cross-compiled for aarch64, run under qemu-aarch64
# native/core is compiled once into libspark_core.a (the spark_core target of binding.gyp; the
# plain build takes node-gyp's when it is current, and its objects of native/engine-libs), and
# every *_test.cc links against it; the bench baselines (bench/baselines/mia-row-store on its
# own, bench/baselines/overlay-mmap over libspark_core) are built and tested beside it.
# crc32_test runs twice: on the path this CPU takes and with the portable fallback forced.
# Ends with one line "N passed, M failed" over all runs; exits 1 if anything failed.
# Run again, it compiles only what changed (native/test/build/VARIANT). JOBS=N compiler runs and
# links at once (default nproc), and four times as many suites; each suite's output is printed
# whole, in order. SPARK_TEST_TIMES=1 makes each suite print its cases' times.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
native=$(dirname "$here")
root=$(dirname "$native")
variant=${1:-plain}
case "$variant" in
  plain | --sanitize | --tsan | --arm64) variant=${variant#--} ;;
  *)
    echo "run.sh: unknown option '$1'; use --sanitize, --tsan, --arm64 or nothing" >&2
    exit 2
    ;;
esac

flags=(-std=c++20 -Wall -Wextra -Werror -pthread -D_FILE_OFFSET_BITS=64 -I"$native")
cxx=${CXX:-g++}
ar=${AR:-ar}
runner=()
crc_expect=""
tests=("$here"/*_test.cc)
# test_flags: what the tests' own sources (native/test/*_test.cc) add. The plain build, the one
# npm test runs, compiles them at -Og with the standard headers precompiled (std_headers.h): half
# the compile time of -O2, while the code under test stays -O2 (node-gyp's core and engine
# objects, or this script's own at the same flags). The other variants compile everything alike.
test_flags=()
case "$variant" in
  plain)
    flags+=(-O2)
    test_flags=(-Og)
    ;;
  sanitize) flags+=(-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer) ;;
  tsan)
    flags+=(-O1 -g -fsanitize=thread)
    tests=("$here"/thread_pool_test.cc "$here"/engine_libs_test.cc "$here"/overlay_abi_test.cc "$here"/engine_row_cache_test.cc "$here"/engine_worker_team_test.cc "$here"/row_store_io_test.cc "$here"/row_store_cache_test.cc "$here"/uring_test.cc "$here"/span_io_test.cc "$here"/pack_test.cc "$here"/verify_sparse_test.cc "$here"/row_store_mapped_test.cc)
    export TSAN_OPTIONS="halt_on_error=1"
    ;;
  arm64)
    flags+=(-O2 -DSPARK_TEST_EMULATED)
    cxx=${ARM64_CXX:-aarch64-linux-gnu-g++}
    ar=${ARM64_AR:-aarch64-linux-gnu-ar}
    runner=(qemu-aarch64 -L "${ARM64_SYSROOT:-/usr/aarch64-linux-gnu}")
    # qemu's default aarch64 CPU ("max") has the CRC extension, so the hardware path must be taken.
    crc_expect=armv8-crc32
    for tool in "$cxx" "$ar" qemu-aarch64; do
      command -v "$tool" >/dev/null || {
        echo "run.sh: $tool not found; install the cross tools: apt-get install g++-aarch64-linux-gnu qemu-user" >&2
        exit 3
      }
    done
    ;;
esac
out="$here/build/$variant"

# The addon links the same library, so a core source missing from binding.gyp would be a
# symbol the addon only misses when it is called.
# The core's sources at any depth (its rooms, native/core/README.md); their object files share
# one directory, so two sources of one name would be one object: refused here.
mapfile -t core_sources < <(find "$native/core" -name '*.cc' | sort)
for src in "${core_sources[@]}"; do
  rel=${src#"$native"/}
  grep -q "\"native/$rel\"" "$root/binding.gyp" || {
    echo "run.sh: native/$rel is not in the spark_core sources of binding.gyp; add it there" >&2
    exit 1
  }
done
dup=$(printf '%s\n' "${core_sources[@]##*/}" | sort | uniq -d)
if [ -n "$dup" ]; then
  echo "run.sh: two core sources are named $dup; give one another name" >&2
  exit 1
fi

# Builds are incremental: each compiler run also writes NAME.d (-MMD), the headers NAME.o was
# built from, and an object is compiled again only when its source or one of those headers is
# newer than it; the compilers and flags of the last build are kept in $out/build-flags, and a
# change of them starts the variant's build afresh. Up to JOBS compiler (and linker) runs at once.
jobs=${JOBS:-$(nproc)}
stamp=$(printf '%s\n' "$cxx" "$ar" "${flags[@]}" "${test_flags[@]}")
if [ "$(cat "$out/build-flags" 2>/dev/null)" != "$stamp" ]; then
  rm -rf "$out"
  mkdir -p "$out"
  printf '%s\n' "$stamp" >"$out/build-flags"
fi
# newer_than TARGET FILE...: whether TARGET exists and is newer than every FILE (which all exist).
newer_than() {
  local target=$1 f
  shift
  [ -e "$target" ] || return 1
  for f in "$@"; do
    [ -e "$f" ] && [ "$f" -ot "$target" ] || return 1
  done
}
# compile_into DIR SOURCE...: DIR/NAME.o for each SOURCE, compiling only the stale ones (with
# unit_flags after flags); objects of sources no longer given are removed. Sets `compiled` to how
# many were compiled.
unit_flags=()
compile_into() {
  local dir=$1 src name keep=() stale=()
  shift
  mkdir -p "$dir"
  for src in "$@"; do
    name=$(basename "$src" .cc)
    keep+=("$name")
    local deps=()
    if [ -f "$dir/$name.d" ]; then
      read -r -d '' -a deps < <(sed -e 's/^[^:]*://' -e 's/\\$//' "$dir/$name.d") || true
    fi
    newer_than "$dir/$name.o" "$src" "${deps[@]}" || stale+=("$src")
  done
  for obj in "$dir"/*.o; do
    [ -e "$obj" ] || continue
    name=$(basename "$obj" .o)
    [[ " ${keep[*]} " == *" $name "* ]] || rm -f "$obj" "$dir/$name.d"
  done
  compiled=${#stale[@]}
  [ "$compiled" -eq 0 ] && return 0
  for src in "${stale[@]}"; do rm -f "$dir/$(basename "$src" .cc).o"; done
  (cd "$dir" && printf '%s\0' "${stale[@]}" | xargs -0 -n 1 -P "$jobs" "$cxx" "${flags[@]}" "${unit_flags[@]}" -MMD -c)
}
# archive LIB DIR: LIB of DIR's objects, made again only when one of them is newer than it.
archive() {
  local lib=$1 dir=$2
  newer_than "$lib" "$dir"/*.o && [ "$compiled" -eq 0 ] && return 0
  rm -f "$lib"
  "$ar" rcs "$lib" "$dir"/*.o
}
# link OUTPUT INPUT... [-lNAME...]: links OUTPUT unless it is newer than every input file.
link() {
  local output=$1 a inputs=()
  shift
  for a in "$@"; do [[ "$a" == -* ]] || inputs+=("$a"); done
  newer_than "$output" "${inputs[@]}" || "$cxx" "${flags[@]}" "$@" -o "$output"
}

# native/core as a static library. The plain build links the one `npm install` built
# (node-gyp's spark_core target: the same sources and -O2, -D_FILE_OFFSET_BITS=64, exceptions on)
# when it is newer than every core source and header and than binding.gyp, and not a sanitizer
# build; else it builds its own. node-gyp builds it without -Werror, so a warning in native/core
# fails this script only when it builds the library itself (always under --sanitize, --tsan and
# --arm64, which CI runs).
core_lib=""
if [ "$variant" = plain ] && [ -z "${CXX:-}" ]; then
  gyp_lib="$root/build/Release/spark_core.a"
  gyp_mk="$root/build/spark_core.target.mk"
  if [ -f "$gyp_lib" ] && [ -f "$gyp_mk" ] && ! grep -q -- -fsanitize "$gyp_mk" &&
    [ -z "$(find "$native/core" "$root/binding.gyp" -newer "$gyp_lib" -print -quit)" ]; then
    core_lib=$gyp_lib
    echo "run.sh: native/core from node-gyp's build: $gyp_lib"
  fi
fi
if [ -z "$core_lib" ]; then
  compile_into "$out/core" "${core_sources[@]}"
  core_lib="$out/libspark_core.a"
  archive "$core_lib" "$out/core"
fi
# The engine libraries' code (native/engine-libs), for engine_libs_test: their C ABIs linked in.
# The plain build takes the objects node-gyp compiled for libengram_rows.so and librow_store.so
# (the same -O2, position-independent and hidden, which a static link does not mind) when there
# is one for every source and each is newer than every file of native/engine-libs and
# native/core and than binding.gyp; else it compiles its own.
engines_lib="$out/libspark_engines.a"
engine_objs=()
if [ "$variant" = plain ] && [ -z "${CXX:-}" ]; then
  for src in "$native"/engine-libs/*/*.cc; do
    rel=${src#"$root"/}
    obj=""
    for target in engram_rows row_store; do
      candidate="$root/build/Release/obj.target/$target/${rel%.cc}.o"
      if [ -f "$candidate" ] &&
        [ -z "$(find "$native/engine-libs" "$native/core" "$root/binding.gyp" -newer "$candidate" -print -quit)" ]; then
        obj=$candidate
        break
      fi
    done
    if [ -z "$obj" ]; then
      engine_objs=()
      break
    fi
    engine_objs+=("$obj")
  done
fi
if [ ${#engine_objs[@]} -gt 0 ]; then
  echo "run.sh: native/engine-libs from node-gyp's build: $root/build/Release/obj.target"
  # The objects the library was made of are listed beside it: a library of other objects is made again.
  if ! newer_than "$engines_lib" "${engine_objs[@]}" ||
    [ "$(cat "$engines_lib.objects" 2>/dev/null)" != "$(printf '%s\n' "${engine_objs[@]}")" ]; then
    rm -f "$engines_lib"
    "$ar" rcs "$engines_lib" "${engine_objs[@]}"
    printf '%s\n' "${engine_objs[@]}" >"$engines_lib.objects"
  fi
else
  compile_into "$out/engines" "$native"/engine-libs/*/*.cc
  [ -f "$engines_lib.objects" ] && compiled=1
  rm -f "$engines_lib.objects"
  archive "$engines_lib" "$out/engines"
fi
# The standard headers, precompiled once at the tests' flags when the compiler is GCC (which
# takes NAME.h.gch beside an -include'd NAME.h); the copy of the header in $out is the one the
# tests' dependency files name, so a change of it compiles them again.
unit_flags=("${test_flags[@]}")
if [ "${#test_flags[@]}" -gt 0 ] && "$cxx" --version 2>/dev/null | grep -q 'Free Software Foundation'; then
  pch=$out/pch/std_headers.h
  if ! newer_than "$pch.gch" "$here/std_headers.h"; then
    mkdir -p "$out/pch"
    cp "$here/std_headers.h" "$pch"
    "$cxx" "${flags[@]}" "${test_flags[@]}" -x c++-header "$pch" -o "$pch.gch"
  fi
  unit_flags+=(-include "$pch" -Winvalid-pch)
fi
compile_into "$out/tests" "${tests[@]}"
unit_flags=()
# The Mia stack's reader re-implemented as a bench baseline (bench/baselines/mia-row-store):
# its own sources, no spark_core; its driver is linked too, so a warning there fails here.
mia="$root/bench/baselines/mia-row-store"
compile_into "$out/mia" "$mia"/*.cc
mia_lib=("$out"/mia/io_pool.o "$out"/mia/row_cache.o "$out"/mia/row_store.o)
# The overlay's read path as a bench baseline (bench/baselines/overlay-mmap): on spark_core's
# thread pool and status, outside the library, with its test beside it.
overlay="$root/bench/baselines/overlay-mmap"
compile_into "$out/overlay-mmap" "$overlay"/*.cc
# The links, JOBS at once (each in the background; wait -n takes them back one by one). The
# first-write probe the engine libraries' benchmark runs cite (bench/baselines/page-touch) is
# built here so a warning in it fails here; not run (it maps 1 GiB three times).
pool=0
pool_failed=0
pool_size=$jobs
start() {
  "$@" &
  pool=$((pool + 1))
  if [ "$pool" -ge "$pool_size" ]; then
    wait -n || pool_failed=1
    pool=$((pool - 1))
  fi
}
for t in "${tests[@]}"; do
  name=$(basename "$t" .cc)
  start link "$out/$name" "$out/tests/$name.o" "$engines_lib" "$core_lib"
done
start link "$out/mia_row_store_test" "${mia_lib[@]}" "$out/mia/row_store_test.o"
start link "$out/mia_row_store_bench" "${mia_lib[@]}" "$out/mia/driver.o"
start link "$out/overlay_mmap_test" "$out"/overlay-mmap/*.o "$core_lib"
start link "$out/page_touch" "$root/bench/baselines/page-touch/page_touch.cc"
while [ "$pool" -gt 0 ]; do
  wait -n || pool_failed=1
  pool=$((pool - 1))
done
[ "$pool_failed" -eq 0 ] || {
  echo "run.sh: a link failed" >&2
  exit 1
}

# The suites run four times JOBS at once (most of their time is waiting: on children, on timed
# lines, on the disk), each into its own log; then each log is printed in order with its label,
# as if they had run one after another.
labels=()
bins=()
envs=()
suite() {
  labels+=("$1")
  bins+=("$2")
  envs+=("${3-}")
}
for t in "${tests[@]}"; do
  name=$(basename "$t" .cc)
  if [ "$name" = crc32_test ]; then
    suite "crc32_test (the path this CPU takes)" "$out/$name" "${crc_expect:+SPARK_CRC32_EXPECT=$crc_expect}"
    suite "crc32_test (portable fallback)" "$out/$name" "SPARK_CRC32_PORTABLE=1 SPARK_CRC32_EXPECT=slice-by-8"
  else
    suite "$name" "$out/$name"
  fi
done
suite mia_row_store_test "$out/mia_row_store_test"
suite overlay_mmap_test "$out/overlay_mmap_test"
log_of() { echo "$out/${1//[^a-z0-9_]/_}.log"; }
# execute LABEL BINARY ENV: runs one suite into its log, its exit status into LOG.status.
execute() {
  local log status=0 vars=()
  log=$(log_of "$1")
  read -r -a vars <<<"$3" || true
  env "${vars[@]}" "${runner[@]}" "$2" >"$log" 2>&1 || status=$?
  echo "$status" >"$log.status"
}
pool_size=$((jobs * 4))
for i in "${!labels[@]}"; do
  start execute "${labels[$i]}" "${bins[$i]}" "${envs[$i]}"
done
while [ "$pool" -gt 0 ]; do
  wait -n || true
  pool=$((pool - 1))
done

passed=0
failed=0
# report LABEL: prints one suite's log and adds its "N passed, M failed" line to the totals; a
# suite that dies without its summary, or exits non-zero with none failed, counts as one failure.
report() {
  local label=$1 log status
  log=$(log_of "$label")
  status=$(cat "$log.status")
  echo "== $label"
  cat "$log"
  local summary p f
  summary=$(grep -E '^[a-z0-9_]+: [0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1 || true)
  if [ -z "$summary" ]; then
    echo "FAIL $label: exited with status $status before its summary"
    failed=$((failed + 1))
    return
  fi
  read -r p f < <(sed -E 's/^.*: ([0-9]+) passed, ([0-9]+) failed$/\1 \2/' <<<"$summary")
  passed=$((passed + p))
  failed=$((failed + f))
  if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then
    echo "FAIL $label: exited with status $status"
    failed=$((failed + 1))
  fi
}
for label in "${labels[@]}"; do report "$label"; done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

#!/usr/bin/env bash
# Builds the libFuzzer target for the safetensors header parser (ASan + UBSan) and runs it.
#   bash native/test/fuzz.sh [seconds]     default 60
# A seed corpus is generated here (8-byte little-endian data length, then the header); what
# the fuzzer finds beyond it accumulates in native/test/build/fuzz/corpus across runs. Exits
# non-zero, leaving the crashing input in native/test/build/fuzz/, if anything is found.
set -euo pipefail
seconds=${1:-60}
here=$(cd "$(dirname "$0")" && pwd)
native=$(dirname "$here")
out="$here/build/fuzz"
mkdir -p "$out/corpus" "$out/seeds"
mapfile -t core_sources < <(find "$native/core" -name '*.cc' | sort)  # every room of the core
cxx=${CXX_FUZZ:-clang++}
command -v "$cxx" >/dev/null || {
  echo "fuzz: $cxx not found; install clang and its libFuzzer runtime: sudo apt-get install -y clang libclang-rt-14-dev" >&2
  exit 3
}

"$cxx" -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
  -fno-omit-frame-pointer -D_FILE_OFFSET_BITS=64 -I"$native" \
  "$here/fuzz_safetensors.cc" "${core_sources[@]}" -o "$out/fuzz_safetensors"

# seed NAME DATA_LENGTH HEADER: one corpus file.
seed() {
  local n=$2 i
  {
    for i in 0 1 2 3 4 5 6 7; do printf "\\x$(printf %02x $(((n >> (8 * i)) & 255)))"; done
    printf '%s' "$3"
  } >"$out/seeds/$1"
}
e() { printf '{"dtype":"%s","shape":%s,"data_offsets":[%s,%s]}' "$1" "$2" "$3" "$4"; }
seed empty 0 '{}'
seed spaces 0 '   {}   '
seed metadata 16 "{\"__metadata__\":{\"format\":\"pt\"},\"w\":$(e F32 '[2,2]' 0 16)}"
seed two 40 "{\"b\":$(e BF16 '[4,2]' 24 40),\"a\":$(e I64 '[3]' 0 24)}"
seed zero 8 "{\"z\":$(e U8 '[0]' 0 0),\"a\":$(e U8 '[8]' 0 8),\"y\":$(e F16 '[0,3]' 8 8)}"
seed subbyte 7 "{\"f4\":$(e F4 '[2,2]' 0 2),\"f6\":$(e F6_E2M3 '[4]' 2 5),\"g6\":$(e F6_E3M2 '[1,4]' 5 8)}"
seed engram 264 "{\"layers.1.engram.embed.weight\":$(e F8_E4M3 '[1,256]' 0 256),\"layers.1.engram.embed.scale\":$(e F8_E8M0 '[1,8]' 256 264)}"
seed big 18446744073709551615 "{\"w\":$(e U8 '[18446744073709551615]' 0 18446744073709551615)}"
seed overflow 0 "{\"w\":$(e U8 '[18446744073709551616]' 0 0)}"
seed escapes 1 "{\"a\\u00e9\\ud83d\\ude00\\n\":$(e BOOL '[]' 0 1)}"
seed dup 2 "{\"a\":$(e U8 '[1]' 0 1),\"a\":$(e U8 '[1]' 1 2)}"
seed nested 0 '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]'
seed json 0 '{"a":[1,-2.5e+3,true,false,null,"x\\"y",{"b":{}}]}'

"$out/fuzz_safetensors" -max_total_time="$seconds" -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
  -dict="$here/fuzz_safetensors.dict" -artifact_prefix="$out/" -print_final_stats=1 \
  "$out/corpus" "$out/seeds"

#!/usr/bin/env bash
# Builds the overlay baseline next to this script: bash build.sh [OUT] (default ./libengram_rows_baseline.so).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/libengram_rows_baseline.so}
"${CXX:-g++}" -std=c++20 -O2 -fPIC -shared -pthread -o "$out" "$here/engram_rows_baseline.cc"
echo "$out"

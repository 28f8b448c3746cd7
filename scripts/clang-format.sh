#!/usr/bin/env bash
# Formats or checks every C++ file (native/, bench/baselines/) with the clang-format pinned in
# package-lock.json (clang-format-node: the same clang-format version on every machine, x86-64
# and arm64 alike; two versions of clang-format do not agree on layout). Style: .clang-format.
#   bash scripts/clang-format.sh          rewrite the files in place
#   bash scripts/clang-format.sh --check  list what is not formatted; exit 1 if any
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-write}
bin=node_modules/.bin/clang-format
[ -x "$bin" ] || { echo "clang-format.sh: $bin is missing: run npm install" >&2; exit 2; }
mapfile -t files < <(find native bench/baselines -type f \( -name '*.cc' -o -name '*.h' \) | sort)
case "$mode" in
  write) "$bin" -i "${files[@]}" ;;
  --check) "$bin" --dry-run -Werror "${files[@]}" ;;
  *) echo "clang-format.sh: unknown option '$mode'; use --check or nothing" >&2; exit 2 ;;
esac

#!/usr/bin/env bash
# npm run lint: eslint, prettier --check, clang-format --check and pyright, two at a time (each
# is one process on one core), every check's output printed whole in this order; exits 1 if any
# failed. eslint and prettier keep caches in node_modules/.cache (eslint's keyed by the config
# and each file's contents, prettier's by each file's contents), so a run after a small change
# checks only what changed; a fresh checkout has none and checks everything.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
bin=node_modules/.bin
checks=(
  "$bin/eslint --cache --cache-strategy content --cache-location node_modules/.cache/eslint/ ."
  "$bin/prettier --check --cache --cache-strategy content --cache-location node_modules/.cache/prettier/.prettier-cache ."
  "bash scripts/clang-format.sh --check"
  "$bin/pyright"
)
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
# Two at a time: the first with the third, the second with the fourth.
for pair in "0 2" "1 3"; do
  for i in $pair; do
    # The commands are ours (no blanks in the paths): word splitting makes their arguments.
    # shellcheck disable=SC2086
    { ${checks[$i]} >"$logs/$i" 2>&1; echo $? >"$logs/$i.status"; } &
  done
  wait
done
failed=0
for i in "${!checks[@]}"; do
  echo "> ${checks[$i]}"
  cat "$logs/$i"
  [ "$(cat "$logs/$i.status")" = 0 ] || failed=1
done
exit "$failed"

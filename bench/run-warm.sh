#!/usr/bin/env bash
# The gathers behind bench/runs/2026-12-01-warm-rows-mapped.md (warm gathers: rows out of a
# mapping beside read calls and the overlay's path). Every source is held in the page cache;
# each row store variant runs twice, copying known-cached rows out of the mapping (the default)
# and with --no-map (every row a read call), beside the overlay's path, in one run.
#
#   bash bench/run-warm.sh [WORK]
#
# WORK receives a small snapshot (1.2 GB), its page pack (rank 0 of 1) and its sparse copy
# (rank 0 of 2). Results go to bench/out/warm-*.json.
set -euo pipefail
cd "$(dirname "$0")/.."
W=${1:-/tmp/spark-bench-warm}
O=bench/out
mkdir -p "$O" "$W"
spark() { node dist/src/bin.js "$@"; }
[ -e "$W/snapshot" ] || spark synth "$W/snapshot" --vocab 200000 --shards 8 --layers 1
[ -e "$W/page" ] || spark pack "$W/snapshot" --out "$W/page" --layout page --rank 0 --world 1
[ -e "$W/sparse" ] || spark pack "$W/snapshot" --out "$W/sparse" --rank 0 --world 2
G=(--threads 2,16 --batch 24,144,49152 --seconds 2 --no-fio --no-naive --engines pread,uring --json)
for m in map nomap; do
  extra=()
  [ "$m" = nomap ] && extra=(--no-map)
  spark bench gather "$W/snapshot" --variants overlay,snapshot "${G[@]}" "${extra[@]}" > "$O/warm-snapshot-$m.json"
  spark bench gather "$W/sparse" --variants overlay,snapshot "${G[@]}" "${extra[@]}" > "$O/warm-sparse-$m.json"
  spark bench gather "$W/page" "${G[@]}" "${extra[@]}" > "$O/warm-page-$m.json"
done
node dist/bench/summarize.js "$O"/warm-{snapshot,sparse,page}-{map,nomap}.json

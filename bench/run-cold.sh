#!/usr/bin/env bash
# The gathers behind bench/runs/2026-12-01-cold-warm-beside-overlay.md "Cold and warm gathers:
# spark's engines beside the overlay's path, against the device ceiling, one run". Every case of one command shares its
# device ceiling (fio io_uring, O_DIRECT, 2 x QD 128, before and after the cases).
#
#   bash bench/run-cold.sh SNAPSHOT [WORK]
#
# SNAPSHOT must be larger than the page cache (then --cold stays cold), e.g. one 29.5 GiB table:
#   node dist/src/bin.js synth /tmp/cold30 --vocab 5000000 --shards 8 --layers 1
# WORK receives a page pack (rank 0 of 4), a sparse copy (rank 0 of 2) and a small warm
# snapshot; ~25 GB of free space. Results go to bench/out/cold-*.json.
set -euo pipefail
cd "$(dirname "$0")/.."
S=${1:?usage: bash bench/run-cold.sh SNAPSHOT [WORK]}
W=${2:-/tmp/spark-bench-cold}
O=bench/out
mkdir -p "$O" "$W"
spark() { node dist/src/bin.js "$@"; }
[ -e "$W/page" ] || spark pack "$S" --out "$W/page" --layout page --rank 0 --world 4
[ -e "$W/sparse" ] || spark pack "$S" --out "$W/sparse" --rank 0 --world 2
[ -e "$W/warm" ] || spark synth "$W/warm" --vocab 200000 --shards 8 --layers 1
G=(--threads 16,64 --batch 144,49152 --seconds 3 --no-naive --json)
# The snapshot (29.5 GiB > page cache): the overlay's path, the pread pool and io_uring.
spark bench gather "$S" --cold --variants overlay,snapshot --engines pread,uring "${G[@]}" > "$O/cold-snapshot.json"
# The sparse copy (smaller than the page cache): evicted before every batch too.
spark bench gather "$W/sparse" --cold --evict-every-batch --variants overlay,snapshot --engines pread,uring "${G[@]}" > "$O/cold-sparse.json"
# spark's page layout, O_DIRECT: cold by construction.
spark bench gather "$W/page" --cold --direct --engines pread,uring "${G[@]}" > "$O/cold-page-direct.json"
# Warm: the small snapshot held in the page cache.
spark bench gather "$W/warm" --variants overlay,snapshot --engines pread,uring --threads 2,16 --batch 24,144,49152 --seconds 2 --no-fio --json > "$O/warm-snapshot.json"
node dist/bench/summarize.js "$O"/cold-snapshot.json "$O"/cold-sparse.json "$O"/cold-page-direct.json "$O"/warm-snapshot.json

#!/usr/bin/env bash
# The runs behind bench/runs/2026-12-01-mia-beside-row-store.md ("The Mia stack's read path
# beside spark's row store"): one dense pack of one layer, each data file given the Mia stack's
# binary header (a pack of format version 1 carries a JSON one; the rows after byte 4096 are
# the same), then
# `spark bench gather --variants packed,mia`: both readers on the same batches, interleaved.
#
#   bash bench/run-mia.sh [WORK] [ROWS]
#
# WORK (default /tmp/spark-bench-mia) receives the pack: ROWS (default 32,000,000) x 264 bytes,
# 8.4 GB; delete it when done. Needs the build (npm run build:native, npm run build:ts).
# Results go to bench/out/mia-*.json; `node dist/bench/summarize.js bench/out/mia-*.json`
# prints them as the tables of the run files in bench/runs/.
set -euo pipefail
cd "$(dirname "$0")/.."
W=${1:-/tmp/spark-bench-mia}
ROWS=${2:-32000000}
O=bench/out
mkdir -p "$O"
node dist/bench/make-mia-pack.js "$W/dense" "$ROWS"
spark() { node dist/src/bin.js "$@"; }
G=(--variants packed,mia --threads 32,64,96 --batch 144,49152 --seconds 3 --json)
# Cold by construction: both readers O_DIRECT (the Mia reader always is); 10 s per reader per
# case, so the 49,152-id cases run 10-30 batches each.
spark bench gather "$W/dense" --cold --direct "${G[@]}" --seconds 10 > "$O/mia-cold-direct.json"
# Cold through the page cache: spark's buffered reads, the pack evicted before every batch.
spark bench gather "$W/dense" --cold --evict-every-batch --no-naive "${G[@]}" > "$O/mia-cold-evicted.json"
# The Mia reader with a 4 GiB 16-way row cache (what its users measured), cold, O_DIRECT.
spark bench gather "$W/dense" --cold --direct --mia-cache-mib 4096 --mia-ways 16 --no-naive "${G[@]}" > "$O/mia-cold-cache4g.json"
# Warm: the rows read into the page cache first (spark copies them from there; the Mia
# reader's O_DIRECT reads still go to the device).
spark bench gather "$W/dense" --no-naive "${G[@]}" > "$O/mia-warm.json"

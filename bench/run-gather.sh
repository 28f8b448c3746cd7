#!/usr/bin/env bash
# The gather runs behind bench/runs/2026-11-30-row-store-gather.md. Fixtures first: node dist/bench/make-fixtures.js .tmp/bench 400000
set -euo pipefail
cd "$(dirname "$0")/.."
F=${1:-.tmp/bench}
O=bench/out
mkdir -p "$O"
spark() { node dist/src/bin.js "$@"; }
T=1,4,16,32,64,96
B=24,144,49152
spark bench gather "$F/pack-page" --cold --threads $T --batch $B --json --svg "$O/cold-page.svg" > "$O/cold-page.json"
spark bench gather "$F/pack-dense" --cold --threads $T --batch $B --json --svg "$O/cold-dense.svg" > "$O/cold-dense.json"
spark bench gather "$F/snap" --cold --threads $T --batch $B --json --svg "$O/cold-snap.svg" > "$O/cold-snap.json"
spark bench gather "$F/pack-page" --cold --direct --threads 1,16,32,64,96 --batch 144,49152 --json --svg "$O/direct-page.svg" > "$O/direct-page.json"
spark bench gather "$F/snap" --threads 32,64 --batch 49152 --json > "$O/warm-snap.json"
spark bench gather "$F/pack-page" --threads 32,64 --batch 49152 --json > "$O/warm-page.json"
for flag in --no-fadvise --no-merge --no-dedup; do
  spark bench gather "$F/pack-page" --cold --threads 64 --batch 144,49152 --no-naive $flag --json > "$O/cold-page$flag.json"
done

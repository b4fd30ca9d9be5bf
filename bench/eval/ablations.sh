#!/usr/bin/env bash
# Writes bench/eval/ablations.txt: each change of the shipped ranking undone alone, on every
# labelled set (mcp-real only where ../shared/data/mcp-real exists), with the command before
# each block. Run from the repository root: make ablations.
set -euo pipefail

sets=(testdata/metatool testdata/schema-tools testdata/service-groups)
if [ -d ../shared/data/mcp-real ]; then
  sets+=(../shared/data/mcp-real)
fi

# BM25 ablations: one --set each.
bm25=("--set k1=8" "--set input_schema=0.5" "--set input_schema=0" "--set name_as_written=0"
  "--set b_description=0.75" "--set stem=0" "--set stop_words=0")
# Hybrid ablations (vectors cached per set under target/eval-vectors).
hybrid=("--set vector_weight_drop=0 --set hybrid=0.75" "--set input_schema=0" "--set stem=0"
  "--set task_parts=0" "--set argument_descriptions=1")

out=bench/eval/ablations.txt
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
{
  echo "# Each change of this ranking undone alone, on every set: for each --set below,"
  echo "#   make eval DATA=<set> EVAL_ARGS=\"--set ...\"            (BM25 lines)"
  echo "#   make eval DATA=<set> EMBEDDINGS=1 EVAL_ARGS=\"--vectors target/eval-vectors/<set> --set ...\"   (hybrid lines)"
  echo "# written by make ablations on the commit that adds or last changes this file, $(date -u +%Y-%m-%dT%H:%MZ)"
} > "$tmp"
lines() { grep -E '^(subset=multi |split=(first|second) )?ranker='"$1"' ' || true; }
for args in "${bm25[@]}"; do
  for set in "${sets[@]}"; do
    echo "## DATA=$set EVAL_ARGS=\"$args\"" >> "$tmp"
    make --no-print-directory eval DATA="$set" EVAL_ARGS="$args" | lines bm25 >> "$tmp"
  done
done
mkdir -p target/eval-vectors
for args in "${hybrid[@]}"; do
  for set in "${sets[@]}"; do
    vectors="--vectors target/eval-vectors/$(basename "$set") $args"
    echo "## DATA=$set EMBEDDINGS=1 EVAL_ARGS=\"$vectors\"" >> "$tmp"
    make --no-print-directory eval DATA="$set" EMBEDDINGS=1 EVAL_ARGS="$vectors" | lines hybrid >> "$tmp"
  done
done
mv "$tmp" "$out"
trap - EXIT
echo "wrote $out"

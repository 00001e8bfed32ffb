#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What the memory-for-time strategies cost and save on gpt-small (6 blocks, hidden 384, 6 heads,
# 256 tokens) at global batch 16, one thread per rank: activation memory and step time with
# recompute none/selective/full against Korthikanti et al.'s formulas; model-state bytes per rank
# under ZeRO 0-3 at dp 2 and 4 against the ZeRO formulas (analysis/strategy_memory.py, which exits
# 1 when a rank differs from them); the pipeline bubble of plain and interleaved 1F1B at pp 2 and
# 4 with 8 micro-batches against (p-1)/(v·m) (analysis/pipeline_bubble.py; pp 4 × interleave 2
# needs 8 chunks, so those two runs use gpt-small's width with 8 blocks). Runs with more ranks
# than cores are oversubscribed (their step times say so, not the memory). A benchmark: about
# 6 minutes on 2 cores.
# Usage: bench/strategies_gpt_small.sh [BUILD_DIR] [OUT_DIR]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
out=${2:-$(mktemp -d -t scalebench-gpt-small.XXXXXX)}
mkdir -p "$out"
export SB_DATA_DIR=${SB_DATA_DIR:-$root/data} OMP_PROC_BIND=false
launch=(mpirun)
if [ "$(id -u)" = 0 ]; then launch+=(--allow-run-as-root); fi
if [ "$(nproc)" -lt 4 ]; then launch+=(--oversubscribe); fi
run() {
  local name=$1 ranks=$2 steps=$3
  shift 3
  echo "[gpt-small] $name ($ranks rank(s), $steps steps)"
  "${launch[@]}" -np "$ranks" "$build/scalebench" train --config "$root/models/gpt/configs/gpt-nano-sotu.yaml" \
    --set model=gpt-small --set batch.global=16 --set "steps=$steps" --set threads=1 --set eval_every=0 \
    --set eval_batches=1 "$@" --out "$out/$name.h5" --force >"$out/$name.log" 2>&1
}
for mode in none selective full; do run "recompute-$mode" 1 3 --set "strategy.recompute=$mode"; done
for dp in 2 4; do
  for zero in 0 1 2 3; do run "dp$dp-zero$zero" "$dp" 3 --set "strategy.dp=$dp" --set "strategy.zero=$zero"; done
done
eight_blocks='model={name: gpt-small-8, layers: 8, hidden: 384, heads: 6, seq_len: 256, vocab: 256}'
run pp2-v1 2 5 --set strategy.pp=2 --set strategy.micro_batches=8
run pp2-v2 2 5 --set strategy.pp=2 --set strategy.micro_batches=8 --set strategy.interleave=2
run pp4-v1 4 5 --set strategy.pp=4 --set strategy.micro_batches=8
run pp4-v1-8-blocks 4 5 --set strategy.pp=4 --set strategy.micro_batches=8 --set "$eight_blocks"
run pp4-v2-8-blocks 4 5 --set strategy.pp=4 --set strategy.micro_batches=8 --set strategy.interleave=2 \
  --set "$eight_blocks"
/usr/bin/python3 "$root/analysis/pipeline_bubble.py" "$out"/pp*.h5
/usr/bin/python3 "$root/analysis/strategy_memory.py" --layers 6 --hidden 384 --heads 6 "$out"/recompute-*.h5 \
  "$out"/dp*.h5

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The closed loop on time for the strategies that trade memory for time: trains gpt-tiny (global
# batch 16, 8 steps, one thread per rank, at most one rank per core) under recompute
# none/selective/full, dp 2 with ZeRO 0-3, tp 2 with and without sequence parallelism, pp 2 plain
# and interleaved, and dp 2 in bf16 (also under ZeRO-1 and 2, which shard the fp32 master weights)
# with fp32 and with 16-bit main gradients (precision.main_grads storage; also under ZeRO-1 and 2,
# and pp 2 in bf16 with them), and resnet-mini on MNIST (global batch 32, 8 steps) under recompute
# none/full, dp 2 with ZeRO 0/2/3 (ZeRO-3 also with full recomputation, and in bf16 with 16-bit
# main gradients), pp 2 plain and interleaved (also in bf16), each run predicted before it trains
# by a profile calibrated on this machine, then prints every run's prediction error and fails
# when one is off by more than 15% (step time) or 5% (memory).
# It runs in rounds (SB_CLOSED_LOOP_ROUNDS, default 5): each round calibrates this machine into
# its own site directory (one calibrate round) and then runs every case once, predicted from it,
# and a case is judged by the median of its rounds' errors. A shared machine's speed wanders by
# 15-20% over minutes; calibrated once, a slow spell during the runs (or the calibration) would
# be charged to the model, where here each run's prediction comes from minutes before it, and a
# round that a spell splits is outvoted. A benchmark, not a test: run it on a quiet machine.
# Usage: bench/strategies_closed_loop.sh [BUILD_DIR] [OUT_DIR]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
out=${2:-$(mktemp -d -t scalebench-closed-loop.XXXXXX)}
export SB_DATA_DIR=${SB_DATA_DIR:-$root/data} OMP_PROC_BIND=false
# calibrate_round: this round's site profile, which the round's runs predict from; timed up to
# micro-batch 32, the largest any case runs (resnet-mini alone: 32 images), since a larger one is
# scaled linearly from the largest timed and a batch that spills the core's cache runs slower
# (resnet-mini at 32 images scaled from 16: 17% short on a 2-core Xeon guest)
calibrate_round() {
  echo "[closed loop] round $round of $rounds: calibrate"
  mkdir -p "$out/sites.r$round"
  "$build/scalebench" calibrate --out "$out/sites.r$round/this-machine.yaml" --threads 1 --precision fp32 \
    --precision bf16 --max-batch 32 --rounds 1 >"$out/calibrate.r$round.log" 2>&1
  export SB_SITES_DIR=$out/sites.r$round
}
launch=(mpirun)
if [ "$(id -u)" = 0 ]; then launch+=(--allow-run-as-root); fi
rounds=${SB_CLOSED_LOOP_ROUNDS:-5}
gpt_tiny=(--config "$root/models/gpt/configs/gpt-nano-sotu.yaml" --set model=gpt-tiny --set batch.global=16 --set steps=8)
resnet_mini=(--config "$root/models/resnet/configs/resnet-mini-mnist.yaml" --set epochs=0 --set steps=8
  --set batch.global=32)
# train_case NAME RANKS MODEL [--set KEY=VALUE ...]: MODEL names one of the arrays above
train_case() {
  local name=$1 ranks=$2
  local -n model=$3
  shift 3
  echo "[closed loop] round $round of $rounds: $name ($ranks rank(s))"
  "${launch[@]}" -np "$ranks" "$build/scalebench" train "${model[@]}" --set threads=1 --set eval_every=0 \
    --set eval_batches=1 "$@" --out "$out/$name.r$round.h5" --force >"$out/$name.r$round.log" 2>&1
}
run() { train_case "$1" "$2" gpt_tiny "${@:3}"; }
run_resnet() { train_case "resnet-$1" "$2" resnet_mini "${@:3}"; }
for round in $(seq 1 "$rounds"); do
  calibrate_round
  run recompute-none 1
  run recompute-selective 1 --set strategy.recompute=selective
  run recompute-full 1 --set strategy.recompute=full
  for zero in 0 1 2 3; do run "dp2-zero$zero" 2 --set strategy.dp=2 --set "strategy.zero=$zero"; done
  run tp2 2 --set strategy.tp=2
  run tp2-sequence-parallel 2 --set strategy.tp=2 --set strategy.sequence_parallel=true
  run pp2 2 --set strategy.pp=2 --set strategy.micro_batches=4
  run pp2-interleave2 2 --set strategy.pp=2 --set strategy.micro_batches=4 --set strategy.interleave=2
  run dp2-bf16 2 --set strategy.dp=2 --set precision=bf16
  for zero in 1 2; do run "dp2-zero$zero-bf16" 2 --set strategy.dp=2 --set "strategy.zero=$zero" --set precision=bf16; done
  run dp2-bf16-main-grads-storage 2 --set strategy.dp=2 --set 'precision={dtype: bf16, main_grads: storage}'
  run dp2-zero1-bf16-main-grads-storage 2 --set strategy.dp=2 --set strategy.zero=1 \
    --set 'precision={dtype: bf16, main_grads: storage}'
  run dp2-zero2-bf16-main-grads-storage 2 --set strategy.dp=2 --set strategy.zero=2 \
    --set 'precision={dtype: bf16, main_grads: storage}'
  run pp2-bf16-main-grads-storage 2 --set strategy.pp=2 --set strategy.micro_batches=4 \
    --set 'precision={dtype: bf16, main_grads: storage}'
  run_resnet recompute-none 1
  run_resnet recompute-full 1 --set strategy.recompute=full
  for zero in 0 2 3; do run_resnet "dp2-zero$zero" 2 --set strategy.dp=2 --set "strategy.zero=$zero"; done
  run_resnet dp2-zero3-recompute-full 2 --set strategy.dp=2 --set strategy.zero=3 --set strategy.recompute=full
  run_resnet dp2-zero3-bf16-main-grads-storage 2 --set strategy.dp=2 --set strategy.zero=3 \
    --set 'precision={dtype: bf16, main_grads: storage}'
  run_resnet pp2 2 --set strategy.pp=2 --set strategy.micro_batches=4
  run_resnet pp2-interleave2 2 --set strategy.pp=2 --set strategy.micro_batches=4 --set strategy.interleave=2
  run_resnet pp2-interleave2-bf16 2 --set strategy.pp=2 --set strategy.micro_batches=4 --set strategy.interleave=2 \
    --set precision=bf16
done
/usr/bin/python3 "$root/analysis/prediction_errors.py" "$out"/*.r*.h5 --step-time-pct 15 --memory-pct 5

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every CUDA test and benchmark (GEMMs, a GPT training step and its kernels, `scalebench train`
# on device cuda against device cpu) on a GPU node in one go and writes a summary.
# Builds first (needs the full toolchain: MPI, HDF5, Kokkos, GoogleTest, Benchmark), or with
# --bundle runs the binaries scripts/gpu_bundle.sh packed (needs only the NVIDIA driver and
# the CUDA 13 libraries, NCCL's too; the bundle brings Open MPI's runtime). Without a GPU every
# test skips and the script still exits 0. test_cuda_train reads the State of the Union corpus
# from SB_DATA_DIR (default: the checkout's data/, where scripts/setup.sh puts it).
# The NCCL section (test_nccl_communicator on 1 rank, and on 2 when 2 GPUs are visible;
# bench_nccl_collectives on one rank per GPU) runs only where mpirun exists: both binaries link
# MPI and call MPI_Init, which Open MPI cannot do without mpirun (a singleton start needs its
# orted and plugins, which a bundle does not carry). Without mpirun, or in a bundle without
# the two binaries, the section says so in the summary and counts as skipped. A bundle carries
# mpirun and orted, so with a bundle the section runs.
# Takes about two and a half minutes on an H200; the time limits below bound each step.
#
#   bash tests/gpu/run_all.sh --out DIR [--bundle DIR] [--quick]
# DIR receives at most 11 files: summary.txt, run_all.log (with the benchmarks' output),
# test_cuda_kernels.txt, test_cuda_storage_kernels.txt, test_cuda_gpt_training.txt,
# test_cuda_train.txt, gpt2_recompute.h5, bench_cuda_gemm.json, bench_cuda_gpt_step.json (the
# bf16 step), test_nccl_communicator.txt, and sanitizer.txt after a failed test.
# Exit status: 0 when everything that ran passed (or skipped), 1 on a failed test or
# benchmark, 2 on bad usage or a broken bundle.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out="" bundle="" quick=""
# The node's own programs (python3 for the PyTorch peer and the prediction table) keep the
# node's libraries; with --bundle, LD_LIBRARY_PATH below puts the bundle's first.
node_library_path=${LD_LIBRARY_PATH:-}
while (($#)); do
  case $1 in
    --out) out=$2; shift 2 ;;
    --bundle) bundle=$2; shift 2 ;;
    --quick) quick=--quick; shift ;;
    *) echo "run_all.sh: unknown argument '$1' (usage: --out DIR [--bundle DIR] [--quick])" >&2; exit 2 ;;
  esac
done
[[ -n $out ]] || { echo "run_all.sh: --out DIR is required" >&2; exit 2; }
mkdir -p "$out" && out=$(cd "$out" && pwd)
log=$out/run_all.log
summary=$out/summary.txt
: >"$log"
say() { echo "$*" | tee -a "$log"; }
started=$(date +%s)
# 3 tests × 50 + 150 (train) + 45 + 150 + 2 GPT steps × 40 + 45 + 3 recompute runs × 90 = 890 s
# at worst, less with --quick
test_limit_s=50 train_limit_s=150 sanitizer_limit_s=45 bench_limit_s=150 step_limit_s=40 kernels_limit_s=45
recompute_limit_s=90
# The GPT step: gpt2-124m in bf16 (the issue's MFU yardstick) at a shape that fills an H200,
# then the same shape in fp32 for comparison (fewer steps: several times slower).
# The PyTorch peer runs the same shape, so the two are compared at one batch.
step_batch=16 step_seq_len=1024
step_shape=(--model gpt2-124m --batch "$step_batch" --seq-len "$step_seq_len")

# ---- the binaries ------------------------------------------------------------------------
if [[ -n $bundle ]]; then
  bundle=$(cd "$bundle" 2>/dev/null && pwd) || { echo "run_all.sh: no bundle at $bundle" >&2; exit 2; }
  bin_dir=$bundle/bin
  # CUDA libraries: the toolkit's, else the ones PyTorch's nvidia-* wheels carry.
  cuda_dirs=""
  for dir in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda/lib; do
    [[ -e $dir/libcublas.so.13 || -e $dir/libnccl.so.2 ]] && cuda_dirs+=":$dir"
  done
  if [[ $cuda_dirs != *libcublas* ]] && command -v python3 >/dev/null; then
    for top in $(python3 -c 'import nvidia, os; print(" ".join(nvidia.__path__))' 2>/dev/null); do
      for dir in $(find "$top" \( -name 'libcublas*.so.13*' -o -name 'libnccl.so.2*' \) -printf '%h\n' 2>/dev/null | sort -u); do
        cuda_dirs+=":$dir"
      done
    done
  fi
  # Open MPI from the bundle: OPAL_PREFIX relocates its plugins, help files and orted.
  export OPAL_PREFIX=$bundle/openmpi PATH=$bundle/openmpi/bin:$PATH PMIX_MCA_mca_base_component_path=$bundle/pmix
  export SB_SCALEBENCH=$bin_dir/scalebench SB_MPIEXEC=$bundle/openmpi/bin/mpirun
  # one node: shared memory between ranks, without the network plugins' libraries
  export OMPI_MCA_pml=${OMPI_MCA_pml:-ob1} OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader}
  node_library_path="${cuda_dirs#:}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export LD_LIBRARY_PATH="$bundle/lib$cuda_dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  say "bundle: $bundle"
  [[ -f $bundle/MANIFEST.txt ]] && sed 's/^/  /' "$bundle/MANIFEST.txt" | tee -a "$log"
  say "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  missing=$(ldd "$bin_dir"/* "$bundle"/openmpi/bin/* 2>&1 | grep -E 'not found|version .* not found' || true)
  if [[ -n $missing ]]; then
    { echo "run_all.sh: the bundle's binaries cannot find their libraries on this node:"; echo "$missing"; } | tee -a "$log" >"$summary"
    exit 2
  fi
else
  build=${SB_GPU_BUILD_DIR:-$root/build-gpu}
  generator=()
  [[ ! -f $build/CMakeCache.txt ]] && command -v ninja >/dev/null && generator=(-G Ninja)
  say "building in $build"
  if ! { cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DSB_ENABLE_CUDA=ON &&
         cmake --build "$build" -j"$(nproc)" --target test_cuda_kernels test_cuda_storage_kernels test_cuda_gpt_training test_cuda_dispatch \
           test_cuda_train scalebench bench_cuda_gemm bench_cuda_gpt_step bench_cuda_gpt_kernels &&
         mkdir -p "$build/gpu-bin" &&
         ln -sf "$build"/tests/cuda/test_cuda_{kernels,storage_kernels,gpt_training,train} "$build"/scalebench "$build"/bench/bench_cuda_{gemm,gpt_step,gpt_kernels} "$build/gpu-bin/"; } >>"$log" 2>&1; then
    echo "run_all.sh: build failed; see $log" | tee -a "$log" >"$summary"
    tail -30 "$log" >>"$summary"
    exit 1
  fi
  bin_dir=$build/gpu-bin
fi

# ---- the device ----------------------------------------------------------------------------
gpu="none visible"
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | head -1)
fi
say "gpu: $gpu"

# ---- tests ---------------------------------------------------------------------------------
# GoogleTest's closing lines: "[  PASSED  ] 3 tests.", "[  FAILED  ] 1 test, listed below:"...
count_of() { grep -oP "^\\[  $1 *\\] \\K[0-9]+(?= tests?[.,])" "$2" | tail -1; }
test_status=0 first_failed="" test_lines=""
export SB_DATA_DIR=${SB_DATA_DIR:-$root/data} OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for name in test_cuda_kernels test_cuda_storage_kernels test_cuda_gpt_training test_cuda_train; do
  [[ -x $bin_dir/$name ]] || { say "$name: not in $bin_dir, skipped"; continue; }
  limit=$test_limit_s
  [[ $name == test_cuda_train ]] && limit=$train_limit_s
  say "running $name (limit ${limit}s)"
  timeout "$limit" "$bin_dir/$name" >"$out/$name.txt" 2>&1
  status=$?
  ((status != 0)) && test_status=1
  passed=$(count_of PASSED "$out/$name.txt") failed=$(count_of FAILED "$out/$name.txt")
  skipped=$(count_of SKIPPED "$out/$name.txt")
  skip_reason=$(grep -m1 -o 'no CUDA device visible' "$out/$name.txt" || true)
  line="$name: exit $status, ${passed:-0} passed, ${failed:-0} failed, ${skipped:-0} skipped${skip_reason:+ ($skip_reason)}"
  ((status == 124)) && line+=" (stopped at the ${limit}s limit)"
  say "$line"
  test_lines+="$line"$'\n'
  test_lines+=$(grep '^\[  FAILED  \] .*(.* ms)$' "$out/$name.txt" | sed 's/^/  /')
  test_lines+=$(grep -B1 -A3 'Failure$' "$out/$name.txt" | head -40 | sed 's/^/  /')
  if [[ -z $first_failed ]]; then
    first=$(grep -m1 -oP '^\[  FAILED  \] \K\S+(?= \(\d+ ms\)$)' "$out/$name.txt" || true)
    [[ -n $first ]] && first_failed="$name $first"
  fi
done
if [[ -z $bundle ]]; then
  "$build/tests/cuda/test_cuda_dispatch" >>"$log" 2>&1 || test_status=1
fi
# A failed test may be a bad memory access that later tests inherit: memcheck the first one.
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
if [[ -n $first_failed && -n $sanitizer ]]; then
  say "memcheck of $first_failed (limit ${sanitizer_limit_s}s)"
  timeout "$sanitizer_limit_s" "$sanitizer" --tool memcheck "$bin_dir/${first_failed%% *}" \
    --gtest_filter="${first_failed#* }" >"$out/sanitizer.txt" 2>&1
  sanitizer_status=$?
  say "memcheck: exit $sanitizer_status ($(grep -m1 'ERROR SUMMARY' "$out/sanitizer.txt" || echo 'no summary'))"
fi

# ---- benchmarks ------------------------------------------------------------------------------
say "running bench_cuda_gemm $quick (limit ${bench_limit_s}s)"
timeout "$bench_limit_s" "$bin_dir/bench_cuda_gemm" $quick --summary "$out/gemm_summary.tmp" \
  --benchmark_out="$out/bench_cuda_gemm.json" --benchmark_out_format=json >>"$log" 2>&1
bench_status=$?
say "bench_cuda_gemm: exit $bench_status"
say "running bench_cuda_gpt_step ${step_shape[*]} --precision bf16 (limit ${step_limit_s}s)"
timeout "$step_limit_s" "$bin_dir/bench_cuda_gpt_step" "${step_shape[@]}" --precision bf16 \
  --summary "$out/gpt_step_summary.tmp" \
  --benchmark_out="$out/bench_cuda_gpt_step.json" --benchmark_out_format=json >>"$log" 2>&1
step_status=$?
say "bench_cuda_gpt_step bf16: exit $step_status"
say "running bench_cuda_gpt_step ${step_shape[*]} --precision fp32 (limit ${step_limit_s}s)"
timeout "$step_limit_s" "$bin_dir/bench_cuda_gpt_step" "${step_shape[@]}" --precision fp32 --steps 4 \
  --summary "$out/gpt_step_fp32.tmp" >>"$log" 2>&1
fp32_step_status=$?
say "bench_cuda_gpt_step fp32: exit $fp32_step_status"
((fp32_step_status != 0 && step_status == 0)) && step_status=$fp32_step_status
[[ -s $out/gpt_step_fp32.tmp ]] && tail -n +2 "$out/gpt_step_fp32.tmp" >>"$out/gpt_step_summary.tmp"
say "running bench_cuda_gpt_kernels (limit ${kernels_limit_s}s)"
timeout "$kernels_limit_s" "$bin_dir/bench_cuda_gpt_kernels" --summary "$out/gpt_kernels_summary.tmp" >>"$log" 2>&1
kernels_status=$?
say "bench_cuda_gpt_kernels: exit $kernels_status"
# The same step in PyTorch on the same GPU, side by side (where python3 has torch; informative).
peer_script=$(dirname "${BASH_SOURCE[0]}")/torch_gpt2_step.py
if [[ -f $peer_script ]] && python3 -c 'import torch' 2>/dev/null; then
  say "running torch_gpt2_step.py (limit ${step_limit_s}s)"
  LD_LIBRARY_PATH=$node_library_path timeout "$step_limit_s" python3 "$peer_script" --batch "$step_batch" --seq-len "$step_seq_len" \
    >"$out/gpt_peer.tmp" 2>>"$log"
  say "torch_gpt2_step.py: exit $?"
fi

# ---- memory for time on the GPU: gpt2-124m under recompute none, selective, full -------------
# `scalebench train` on cuda (bf16, batch 32 × 1024, 20 steps) into one file; the summary takes
# each run's median step and tracked memory from `scalebench inspect`, and, where python3 has
# h5py, the prediction beside them (site SB_GPU_SITE, e.g. h200-sxm-hgx; none without it).
recompute_status=0 recompute_lines=""
recompute_file=$out/gpt2_recompute.h5
if [[ $gpu == "none visible" ]]; then
  recompute_lines="recompute: skipped (no CUDA device visible)"
elif [[ ! -x $bin_dir/scalebench ]]; then
  recompute_lines="recompute: skipped (no scalebench in $bin_dir)"
else
  rm -f "$recompute_file"
  for recompute in none selective full; do
    say "running scalebench train gpt2-124m bf16, recompute $recompute (limit ${recompute_limit_s}s)"
    append=()
    [[ -f $recompute_file ]] && append=(--append)
    timeout "$recompute_limit_s" "$bin_dir/scalebench" train --config "$root/models/gpt/configs/gpt2-124m-cuda.yaml" \
      --set steps=20 --set eval_every=0 --set "strategy.recompute=$recompute" ${SB_GPU_SITE:+--set "site=$SB_GPU_SITE"} \
      --out "$recompute_file" "${append[@]}" --run-id "recompute-$recompute" --progress off >>"$log" 2>&1
    status=$?
    say "recompute $recompute: exit $status"
    ((status != 0)) && recompute_status=1
  done
  if [[ -f $recompute_file ]]; then
    recompute_lines=$("$bin_dir/scalebench" inspect "$recompute_file" 2>&1 |
      grep -E '^run |median step time|peak tracked memory' | sed 's/^/  /')
    if [[ -n ${SB_GPU_SITE:-} ]] && LD_LIBRARY_PATH=$node_library_path python3 -c 'import h5py' 2>/dev/null; then
      recompute_lines+=$'\n'$(LD_LIBRARY_PATH=$node_library_path python3 \
        "$root/analysis/prediction_errors.py" "$recompute_file" 2>&1 | sed 's/^/  /')
    fi
  fi
  recompute_lines="recompute on the GPU (gpt2-124m bf16, batch 32 x 1024): exit $recompute_status"$'\n'"$recompute_lines"
fi

# ---- NCCL: the communicator's test and the collectives benchmark, under mpirun ------------------
nccl_status=0 nccl_lines=""
nccl_limit_s=90
nccl_note() { say "$1"; nccl_lines+="$1"$'\n'; }
if ! command -v mpirun >/dev/null; then
  nccl_note "nccl: skipped (no mpirun on this node; the NCCL binaries link MPI and need it to start)"
else
  nccl_bin=""
  if [[ -n $bundle ]]; then
    [[ -x $bin_dir/test_nccl_communicator && -x $bin_dir/bench_nccl_collectives ]] && nccl_bin=$bin_dir
    [[ -z $nccl_bin ]] && nccl_note "nccl: skipped (the bundle carries no test_nccl_communicator/bench_nccl_collectives)"
  elif grep -q '^SB_NCCL_LIBRARY:FILEPATH=.*NOTFOUND' "$build/CMakeCache.txt" 2>/dev/null; then
    nccl_note "nccl: skipped (the build found no NCCL: see SB_NCCL_LIBRARY in $build/CMakeCache.txt)"
  elif cmake --build "$build" -j"$(nproc)" --target test_nccl_communicator bench_nccl_collectives >>"$log" 2>&1; then
    nccl_bin=$build/nccl-bin
    mkdir -p "$nccl_bin" && ln -sf "$build/tests/cuda/test_nccl_communicator" "$build/bench/bench_nccl_collectives" "$nccl_bin/"
  else
    nccl_status=1
    nccl_note "nccl: build of test_nccl_communicator/bench_nccl_collectives failed (see run_all.log)"
  fi
  if [[ -n $nccl_bin ]]; then
    gpus=0
    command -v nvidia-smi >/dev/null && gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    rank_counts=(1)
    ((gpus >= 2)) && rank_counts+=(2)
    : >"$out/test_nccl_communicator.txt"
    for ranks in "${rank_counts[@]}"; do
      say "running test_nccl_communicator on $ranks rank(s) (limit ${nccl_limit_s}s)"
      part=$out/nccl_np$ranks.tmp
      timeout "$nccl_limit_s" mpirun -n "$ranks" "$nccl_bin/test_nccl_communicator" --gtest_color=no >"$part" 2>&1
      status=$?
      ((status != 0)) && nccl_status=1
      passed=$(count_of PASSED "$part") failed=$(count_of FAILED "$part") skipped=$(count_of SKIPPED "$part")
      line="test_nccl_communicator np$ranks: exit $status, ${passed:-0} passed, ${failed:-0} failed, ${skipped:-0} skipped"
      ((status == 124)) && line+=" (stopped at the ${nccl_limit_s}s limit)"
      nccl_note "$line"
      nccl_lines+=$(grep -m1 '^NCCL ' "$part" | sed 's/^/  /')$'\n'
      nccl_lines+=$(grep '^\[  FAILED  \] .*(.* ms)$' "$part" | sed 's/^/  /')
      { echo "==== mpirun -n $ranks test_nccl_communicator"; cat "$part"; } >>"$out/test_nccl_communicator.txt"
    done
    bench_ranks=$((gpus > 0 ? gpus : 1))
    say "running bench_nccl_collectives $quick on $bench_ranks rank(s) (limit ${nccl_limit_s}s)"
    timeout "$nccl_limit_s" mpirun -n "$bench_ranks" "$nccl_bin/bench_nccl_collectives" $quick \
      --summary "$out/nccl_summary.tmp" >>"$log" 2>&1
    status=$?
    ((status != 0)) && nccl_status=1
    nccl_note "bench_nccl_collectives: exit $status"
    if [[ -s $out/nccl_summary.tmp ]]; then nccl_lines+=$(cat "$out/nccl_summary.tmp")$'\n'; fi
  fi
fi

# ---- summary --------------------------------------------------------------------------------
elapsed=$(($(date +%s) - started))
status=0
((test_status != 0 || bench_status != 0 || step_status != 0 || kernels_status != 0 || nccl_status != 0 ||
  recompute_status != 0)) && status=1
{
  echo "scalebench GPU checks: $( ((status == 0)) && echo OK || echo FAILED ) in ${elapsed}s on $(hostname), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "gpu: $gpu"
  echo "binaries: ${bundle:-built in $build}"
  [[ -n $bundle && -f $bundle/MANIFEST.txt ]] && grep -E '^(git|built|nvcc|cuda arch)' "$bundle/MANIFEST.txt"
  echo
  echo "$test_lines"
  [[ -f $out/sanitizer.txt ]] && echo "  memcheck of $first_failed: $(grep -m1 'ERROR SUMMARY' "$out/sanitizer.txt" || echo 'no summary') (sanitizer.txt)"
  echo
  for bench in gemm gpt_step gpt_kernels; do
    case $bench in gemm) bench_exit=$bench_status ;; gpt_step) bench_exit=$step_status ;; *) bench_exit=$kernels_status ;; esac
    echo "bench_cuda_$bench: exit $bench_exit"
    if [[ -s $out/${bench}_summary.tmp ]]; then cat "$out/${bench}_summary.tmp"; else echo "  (no summary: see run_all.log)"; fi
    echo
  done
  [[ -s $out/gpt_peer.tmp ]] && cat "$out/gpt_peer.tmp"
  echo
  echo "$recompute_lines"
  echo
  echo "$nccl_lines"
} >"$summary"
rm -f "$out"/*.tmp
tee -a "$log" <"$summary"
exit $status

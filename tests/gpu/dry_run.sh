#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The GPU script's dry run (ctest gpu_bundle_dry_run, label cuda): packs the bundle from an
# existing build (scripts/gpu_bundle.sh --no-build) and runs tests/gpu/run_all.sh --bundle
# --quick on it, so that neither script rots between the runs on GPU nodes. Where no GPU is
# visible every CUDA test must skip with "no CUDA device visible" and the NCCL section must
# start its binaries under the bundle's own mpirun (Open MPI relocated by OPAL_PREFIX); where a
# GPU is visible this is the quick version of the real run and must pass.
#
#   bash tests/gpu/dry_run.sh BUILD_DIR SCRATCH_DIR
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:?usage: dry_run.sh BUILD_DIR SCRATCH_DIR} scratch=${2:?usage: dry_run.sh BUILD_DIR SCRATCH_DIR}
fail() { echo "dry_run: $*" >&2; exit 1; }
rm -rf "$scratch" && mkdir -p "$scratch" || fail "cannot create $scratch"

"$root/scripts/gpu_bundle.sh" --no-build --out "$scratch" "$build" >"$scratch/bundle.log" 2>&1 ||
  { cat "$scratch/bundle.log" >&2; fail "scripts/gpu_bundle.sh failed"; }
[[ -s $scratch/.gpu-bundle.tar.xz ]] || fail "no .gpu-bundle.tar.xz packed"
for tool in mpirun orted; do
  [[ -x $scratch/.gpu-bundle/openmpi/bin/$tool ]] || fail "the bundle carries no Open MPI $tool"
done

bash "$root/tests/gpu/run_all.sh" --bundle "$scratch/.gpu-bundle" --out "$scratch/out" --quick >"$scratch/run.log" 2>&1
status=$?
summary=$scratch/out/summary.txt
[[ -f $summary ]] || { cat "$scratch/run.log" >&2; fail "run_all.sh wrote no summary (exit $status)"; }
cat "$summary"
((status == 0)) || fail "run_all.sh --bundle exited $status"
grep -q '^scalebench GPU checks: OK' "$summary" || fail "the summary does not say OK"
for name in test_cuda_kernels test_cuda_storage_kernels test_cuda_gpt_training test_cuda_train; do
  grep -q "^$name: exit 0" "$summary" || fail "$name did not run from the bundle"
done
grep -q '^test_nccl_communicator np1: exit 0' "$summary" || fail "test_nccl_communicator did not start under the bundle's mpirun"
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  for name in test_cuda_kernels test_cuda_storage_kernels test_cuda_gpt_training test_cuda_train; do
    grep -qE "^$name: exit 0, [0-9]+ passed, 0 failed, [1-9][0-9]* skipped \(no CUDA device visible\)" "$summary" ||
      fail "$name did not skip with 'no CUDA device visible' on a machine without a GPU"
  done
fi
echo "dry_run: OK"

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the CUDA test and benchmark binaries on this (CPU) machine and packs them into
# .gpu-bundle/ with every shared library they need that a bare GPU node lacks, so that
# tests/gpu/run_all.sh --bundle .gpu-bundle runs them there without building. Leaves out
# glibc, libstdc++/libgcc and the NVIDIA driver and CUDA libraries (cudart, cuBLAS,
# cuBLASLt): the GPU node has its own. The GPT binaries link the engine, so MPI, HDF5, Kokkos
# and OpenBLAS travel as libraries (loaded, never initialised there). The bundle is
# git-ignored and at most 60 MiB.
#
#   scripts/gpu_bundle.sh [BUILD_DIR]      (default: build)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
bundle=$root/.gpu-bundle
max_bytes=$((60 * 1024 * 1024))
binaries=(tests/cuda/test_cuda_kernels tests/cuda/test_cuda_storage_kernels tests/cuda/test_cuda_gpt_training bench/bench_cuda_gemm bench/bench_cuda_gpt_step bench/bench_cuda_gpt_kernels)
# Libraries every Linux GPU node has (glibc, the C++ runtime) or that must come from the node
# itself (the driver, the CUDA libraries matching it).
on_every_node='^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libstdc\+\+\.so|libgcc_s\.so|libcuda\.so|libcudart\.so|libcublas\.so|libcublasLt\.so|libnvidia)'

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j2 --target test_cuda_kernels test_cuda_storage_kernels test_cuda_gpt_training bench_cuda_gemm bench_cuda_gpt_step bench_cuda_gpt_kernels

rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/lib"
for binary in "${binaries[@]}"; do
  cp "$build/$binary" "$bundle/bin/"
done
# The runner travels too, so a checkout without this branch can run: bash .gpu-bundle/run_all.sh
cp "$root/tests/gpu/run_all.sh" "$bundle/run_all.sh"
cp "$root/tests/gpu/torch_gpt2_step.py" "$bundle/torch_gpt2_step.py"

# Every library ldd resolves, except those above; then the same for what they pull in.
copy_dependencies() {
  ldd "$1" | awk '/=> \// {print $1, $3}' | while read -r name path; do
    if [[ $name =~ $on_every_node ]] || [[ -e $bundle/lib/$name ]]; then continue; fi
    cp -L "$path" "$bundle/lib/$name"
    copy_dependencies "$bundle/lib/$name"
  done
}
for binary in "$bundle"/bin/*; do copy_dependencies "$binary"; done
# Symbol tables are not needed to run; without them the bundle stays under its limit.
strip --strip-unneeded "$bundle"/bin/* "$bundle"/lib/*

# The bundle must start with only itself and the CUDA libraries on the path.
missing=$(LD_LIBRARY_PATH="$bundle/lib:/usr/local/cuda/lib64" ldd "$bundle"/bin/* | grep 'not found' || true)
if [[ -n $missing ]]; then
  echo "gpu_bundle: unresolved libraries:" >&2
  echo "$missing" >&2
  exit 1
fi

{
  echo "scalebench GPU bundle"
  echo "git: $(git -C "$root" rev-parse --short=12 HEAD)$(git -C "$root" diff --quiet || echo '+dirty')"
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
  echo "nvcc: $(grep -m1 CMAKE_CUDA_COMPILER_VERSION "$build/CMakeFiles/"*/CMakeCUDACompiler.cmake 2>/dev/null | sed 's/.*"\(.*\)".*/\1/')"
  echo "cuda architectures: $(strings "$bundle/bin/test_cuda_kernels" | grep -o -- '-arch sm_[0-9a-z]*' | sort -u | cut -d' ' -f2 | tr '\n' ' ')"
  echo "glibc needed (highest): $(objdump -T "$bundle"/bin/* "$bundle"/lib/* 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)"
  echo "libstdc++ needed (highest): $(objdump -T "$bundle"/bin/* "$bundle"/lib/* 2>/dev/null | grep -o 'GLIBCXX_[0-9.]*' | sort -uV | tail -1)"
  echo "binaries: $(cd "$bundle/bin" && echo *)"
  echo "libraries: $(cd "$bundle/lib" && echo *)"
  echo "from the node: $(ldd "$bundle"/bin/* | awk '/=>/ {print $1}' | grep -E 'cublas|cudart|libcuda' | sort -u | tr '\n' ' ')(and cuBLAS, cuBLASLt: opened at the first GPU call, from LD_LIBRARY_PATH)"
} >"$bundle/MANIFEST.txt"

bytes=$(du -sb "$bundle" | cut -f1)
if ((bytes > max_bytes)); then
  echo "gpu_bundle: $bundle is $((bytes / 1024 / 1024)) MiB, over the 60 MiB limit" >&2
  exit 1
fi
cat "$bundle/MANIFEST.txt"
echo "gpu_bundle: $bundle ($((bytes / 1024)) KiB) ready: bash tests/gpu/run_all.sh --bundle .gpu-bundle --out DIR"

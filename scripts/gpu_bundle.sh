#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the CUDA test and benchmark binaries and scalebench itself on this (CPU) machine and
# packs them into .gpu-bundle/ with every shared library they need that a bare GPU node lacks,
# so that tests/gpu/run_all.sh --bundle .gpu-bundle runs them there without building. Leaves
# out glibc, libstdc++/libgcc and the NVIDIA driver and CUDA libraries (cudart, cuBLAS,
# cuBLASLt, NCCL): the GPU node has its own (PyTorch's nvidia-* wheels carry them). The engine's
# binaries link MPI, HDF5, Kokkos, OpenBLAS and oneDNN, which travel as libraries; Open MPI's
# runtime travels too (mpirun, orted, its and PMIx's plugins, help files; relocated by
# OPAL_PREFIX), so scalebench starts there as a singleton and the NCCL tests under mpirun. The
# bundle is git-ignored; .gpu-bundle.tar.xz, the same packed for the trip, is at most 60 MiB.
#
#   scripts/gpu_bundle.sh [--no-build] [--out DIR] [BUILD_DIR]
# BUILD_DIR defaults to build; --no-build packs what it holds without configuring or building
# (the CI's dry run, beside tests that use the same build); DIR (default: the checkout) receives
# .gpu-bundle/ and .gpu-bundle.tar.xz.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build out_dir=$root do_build=1
while (($#)); do
  case $1 in
    --no-build) do_build=0; shift ;;
    --out) out_dir=$2; shift 2 ;;
    -*) echo "gpu_bundle.sh: unknown option '$1' (usage: [--no-build] [--out DIR] [BUILD_DIR])" >&2; exit 2 ;;
    *) build=$1; shift ;;
  esac
done
mkdir -p "$out_dir" && out_dir=$(cd "$out_dir" && pwd)
bundle=$out_dir/.gpu-bundle
max_bytes=$((60 * 1024 * 1024))
targets=(test_cuda_kernels test_cuda_storage_kernels test_cuda_gpt_training test_cuda_train scalebench
  bench_cuda_gemm bench_cuda_gpt_step bench_cuda_gpt_kernels test_nccl_communicator bench_nccl_collectives)
binaries=(tests/cuda/test_cuda_kernels tests/cuda/test_cuda_storage_kernels tests/cuda/test_cuda_gpt_training
  tests/cuda/test_cuda_train scalebench bench/bench_cuda_gemm bench/bench_cuda_gpt_step bench/bench_cuda_gpt_kernels
  tests/cuda/test_nccl_communicator bench/bench_nccl_collectives)
# Libraries every Linux GPU node has (glibc's, which must match the node's libc; the C++
# runtime) or that must come from the node itself (the driver, the CUDA libraries matching it).
on_every_node='^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libresolv\.so|libutil\.so|libanl\.so|libnsl\.so|libstdc\+\+\.so|libgcc_s\.so|libcuda\.so|libcudart\.so|libcublas\.so|libcublasLt\.so|libnccl\.so|libnvidia)'

if ((do_build)); then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" -j2 --target "${targets[@]}"
fi
for binary in "${binaries[@]}"; do
  [[ -x $build/$binary ]] || { echo "gpu_bundle: $build/$binary is not built (run without --no-build)" >&2; exit 1; }
done

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

# Open MPI's runtime, laid out under its own prefix as installed, so that OPAL_PREFIX relocates
# every path it derives from the prefix (plugins, help files, orted).
mpi_path() { ompi_info --path all --parsable | awk -F: -v key="$1" '$1 == "path" && $2 == key {print $3; exit}'; }
mpi_prefix=$(mpi_path prefix)
mpi_plugins=$(mpi_path pkglibdir) mpi_help=$(mpi_path pkgdatadir) mpi_bin=$(mpi_path bindir)
mkdir -p "$bundle/openmpi/${mpi_plugins#"$mpi_prefix"/}" "$bundle/openmpi/${mpi_help#"$mpi_prefix"/}" \
  "$bundle/openmpi/${mpi_bin#"$mpi_prefix"/}"
cp -L "$mpi_plugins"/*.so "$bundle/openmpi/${mpi_plugins#"$mpi_prefix"/}/"
cp -L "$mpi_help"/* "$bundle/openmpi/${mpi_help#"$mpi_prefix"/}/" 2>/dev/null || true
for tool in mpirun mpiexec orterun orted; do
  [[ -e $mpi_bin/$tool ]] && cp -L "$mpi_bin/$tool" "$bundle/openmpi/${mpi_bin#"$mpi_prefix"/}/"
done
for file in "$bundle"/openmpi/"${mpi_plugins#"$mpi_prefix"/}"/*.so "$bundle"/openmpi/"${mpi_bin#"$mpi_prefix"/}"/*; do
  copy_dependencies "$file"
done
# PMIx's plugins (Debian's Open MPI uses the external PMIx), found through
# PMIX_MCA_mca_base_component_path: without them PMIx asks for a help file it cannot find.
pmix_library=$(readlink -f "$(ldd "$mpi_plugins"/mca_pmix_*.so 2>/dev/null | awk '/libpmix\.so/ {print $3; exit}')")
if [[ -n $pmix_library && -d $(dirname "$pmix_library")/pmix ]]; then
  mkdir -p "$bundle/pmix"
  cp -L "$(dirname "$pmix_library")"/pmix/*.so "$bundle/pmix/"
  for file in "$bundle"/pmix/*.so; do copy_dependencies "$file"; done
fi
# Symbol tables are not needed to run; without them the bundle stays under its limit.
strip --strip-unneeded "$bundle"/bin/* "$bundle"/lib/* "$bundle"/openmpi/bin/* 2>/dev/null || true

# The bundle must start with only itself and the CUDA libraries on the path.
missing=$(LD_LIBRARY_PATH="$bundle/lib:/usr/local/cuda/lib64:$(dirname "$(find /usr/local/cuda*/ -name 'libnccl.so.2' -print -quit 2>/dev/null || echo /)")" \
  ldd "$bundle"/bin/* | grep 'not found' || true)
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
  echo "from the node: $(ldd "$bundle"/bin/* | awk '/=>/ {print $1}' | grep -E 'cublas|cudart|libcuda|nccl' | sort -u | tr '\n' ' ')(and cuBLAS, cuBLASLt: opened at the first GPU call, from LD_LIBRARY_PATH)"
  echo "open mpi: $(ompi_info --version 2>/dev/null | head -1), relocated with OPAL_PREFIX=<bundle>/openmpi"
} >"$bundle/MANIFEST.txt"

# xz on every core at level 3: on two cores 13 s for 32 MiB, against 32 s for 28 MiB at xz's default 6
XZ_OPT="${XZ_OPT:--T0 -3}" tar -C "$out_dir" -cJf "$out_dir/.gpu-bundle.tar.xz" .gpu-bundle
bytes=$(stat -c %s "$out_dir/.gpu-bundle.tar.xz")
if ((bytes > max_bytes)); then
  echo "gpu_bundle: .gpu-bundle.tar.xz is $((bytes / 1024 / 1024)) MiB, over the 60 MiB limit" >&2
  exit 1
fi
cat "$bundle/MANIFEST.txt"
echo "gpu_bundle: $bundle ($(du -sm "$bundle" | cut -f1) MiB; packed $((bytes / 1024 / 1024)) MiB in .gpu-bundle.tar.xz) ready:"
echo "  bash tests/gpu/run_all.sh --bundle $bundle --out DIR    (on the node: tar -xJf .gpu-bundle.tar.xz first)"

# SPDX-License-Identifier: Apache-2.0
# Spack recipe for scalebench (a repository of one package: `spack repo add packaging/spack`).
# Its dependency list mirrors the find_package calls of CMakeLists.txt, tests/ and bench/; CI
# checks that (tests/install/check_spack_recipe.py), since Spack itself is not installed there.
import os

from spack.package import *

# The clone this recipe sits in (packaging/spack/packages/scalebench/): no public repository is
# published yet, so Spack fetches from it, or from SCALEBENCH_GIT (a site's mirror, any git URL).
_HERE = os.path.dirname(os.path.abspath(__file__))
_CLONE = os.path.abspath(os.path.join(_HERE, "..", "..", "..", ".."))


class Scalebench(CMakePackage, CudaPackage):
    """Measure and predict how neural-network training scales: reference GPT and ResNet models
    trained under data, tensor and pipeline parallelism over MPI (CPUs) and NCCL (GPUs), a
    calibrated cost model, and HDF5 results."""

    homepage = os.environ.get("SCALEBENCH_GIT", "file://" + _CLONE)
    git = os.environ.get("SCALEBENCH_GIT", "file://" + _CLONE)
    license("Apache-2.0")

    version("main", branch="main")

    variant("nccl", default=True, when="+cuda", description="NCCL communicators for GPU runs")
    variant("benchmarks", default=False, description="build the Google Benchmark targets (bench/)")
    variant("datasets", default=False,
            description="install the data sets fetched by scripts/setup.sh into share/scalebench/data")

    depends_on("cmake@3.25:", type="build")
    depends_on("c", type="build")
    depends_on("cxx", type="build")

    depends_on("mpi")
    depends_on("hdf5@1.10:+mpi+hl")
    # Kokkos' OpenMP back-end; its threads and OpenBLAS's share one OpenMP pool
    depends_on("kokkos@3.4:+openmp")
    depends_on("openblas threads=openmp")
    # bf16 GEMMs on AMX/AVX512-BF16 CPUs, in the same OpenMP pool
    depends_on("onednn@2.6: cpu_runtime=omp")
    depends_on("yaml-cpp@0.7:")
    depends_on("cli11@2:")
    depends_on("nlohmann-json@3.11:")
    depends_on("fmt@9:")
    depends_on("zlib-api")
    depends_on("nccl", when="+nccl")

    depends_on("googletest", type="test")
    depends_on("benchmark", when="+benchmarks")

    conflicts("%gcc@:11", msg="scalebench is C++20: GCC 12 or newer")

    def cmake_args(self):
        spec = self.spec
        args = [
            self.define("SB_BUILD_TESTS", self.run_tests),
            self.define_from_variant("SB_BUILD_BENCHMARKS", "benchmarks"),
            self.define_from_variant("SB_INSTALL_DATASETS", "datasets"),
            self.define("SB_ENABLE_CUDA", "ON" if spec.satisfies("+cuda") else "OFF"),
            self.define("SB_ENABLE_NCCL", "ON" if spec.satisfies("+nccl") else "OFF"),
            self.define("Kokkos_ROOT", spec["kokkos"].prefix),
            self.define("BLA_VENDOR", "OpenBLAS"),
            self.define("SB_OPENBLAS_LIBRARY", spec["openblas"].libs[0]),
        ]
        if spec.satisfies("+cuda"):
            args.append(self.define("CMAKE_CUDA_ARCHITECTURES", spec.variants["cuda_arch"].value))
        if spec.satisfies("+nccl"):
            args.append(self.define("NCCL_ROOT", spec["nccl"].prefix))
        return args

    def setup_run_environment(self, env):
        env.set("SCALEBENCH_ROOT", self.prefix)

#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The Spack recipe (packaging/spack) against the build it describes, without Spack.

Checks that package.py parses; that its depends_on list is exactly the packages behind the
find_package/find_library calls of CMakeLists.txt, cmake/, tests/ and bench/ (through the table
below: a new find_package without a Spack name fails here until the recipe and the table say what
provides it); and that every CMake variable its cmake_args define is one the build reads.

Usage: check_spack_recipe.py SOURCE_DIR
"""
import ast
import pathlib
import re
import sys

source = pathlib.Path(sys.argv[1])
recipe = source / "packaging/spack/packages/scalebench/package.py"
assert (source / "packaging/spack/repo.yaml").is_file(), "packaging/spack/repo.yaml is missing"
tree = ast.parse(recipe.read_text(), str(recipe))

# CMake's name of a dependency -> the Spack package providing it (None: the compiler's own)
SPACK_NAME = {
    "MPI": "mpi", "HDF5": "hdf5", "OpenMP": None, "Kokkos": "kokkos", "BLAS": "openblas",
    "openblas": "openblas", "yaml-cpp": "yaml-cpp", "CLI11": "cli11", "nlohmann_json": "nlohmann-json",
    "fmt": "fmt", "ZLIB": "zlib-api", "CUDAToolkit": "cuda", "nccl": "nccl", "GTest": "googletest",
    "benchmark": "benchmark", "dnnl": "onednn",
}
# build-only dependencies and what CudaPackage brings (+cuda, cuda_arch, depends_on cuda)
RECIPE_ONLY = {"cmake", "c", "cxx"}

cmake_files = [source / "CMakeLists.txt", *sorted((source / "cmake").glob("*.cmake")),
               source / "tests/CMakeLists.txt", source / "bench/CMakeLists.txt"]
cmake_text = "\n".join(re.sub(r"#.*", "", p.read_text()) for p in cmake_files)  # code, not comments
found = set(re.findall(r"find_package\((\w[\w-]*)", cmake_text))
found |= {names.split()[0] for names in re.findall(r"find_library\(\w+ NAMES ([\w ]+)", cmake_text)}
unknown = found - SPACK_NAME.keys()
assert not unknown, f"find_package/find_library of {sorted(unknown)}: add the Spack package to the recipe and this table"
wanted = {SPACK_NAME[name] for name in found} - {None}

depends, variants, defined = set(), set(), set()
for node in ast.walk(tree):
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args:
        first = node.args[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            if node.func.id == "depends_on":
                depends.add(re.match(r"[\w-]+", first.value).group(0))
            elif node.func.id == "variant":
                variants.add(first.value)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
        if node.func.attr in ("define", "define_from_variant") and isinstance(node.args[0], ast.Constant):
            defined.add(node.args[0].value)

bases = {b.id for c in tree.body if isinstance(c, ast.ClassDef) for b in c.bases if isinstance(b, ast.Name)}
assert {"CMakePackage", "CudaPackage"} <= bases, bases
provided = depends | ({"cuda"} if "CudaPackage" in bases else set())
missing = wanted - provided
extra = depends - wanted - RECIPE_ONLY
assert not missing, f"the recipe does not depend on {sorted(missing)}, which the CMake build finds"
assert not extra, f"the recipe depends on {sorted(extra)}, which the CMake build never finds"
assert {"nccl", "benchmarks", "datasets"} <= variants, variants
unread = sorted(v for v in defined if not re.search(rf"\b{re.escape(v)}\b", cmake_text))
assert not unread, f"cmake_args define {unread}, which no CMake file reads"
print(f"spack recipe ok: {len(depends)} dependencies, variants {sorted(variants)} (+cuda from CudaPackage), "
      f"{len(defined)} CMake variables")

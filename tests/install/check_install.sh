#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `cmake --install` of a built tree, used as a user would: the executable run from another
# folder, with the source tree hidden where the kernel allows it (a private mount namespace,
# `unshare -m`, as root), so nothing can come from SB_SOURCE_DIR; then `run` (a two-case suite),
# `predict` (and `predict --validate` of a shipped set), `report` and `submit --dry-run`, the Tcl
# module file read by tclsh, and a consumer CMake project built against the installed package
# (find_package(scalebench)).
#
#   check_install.sh BUILD_DIR SOURCE_DIR WORK_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
source_dir=$(cd "$2" && pwd)
work=$3
rm -rf "$work"
mkdir -p "$work"
work=$(cd "$work" && pwd)
case "$work" in "$source_dir"/*) echo "check_install: WORK_DIR must be outside the source tree" >&2; exit 2 ;; esac
prefix="$work/prefix"

echo "== cmake --install (runtime, development; data sets: sotu only)"
cmake --install "$build" --prefix "$prefix" --component runtime > "$work/install.log"
cmake --install "$build" --prefix "$prefix" --component development >> "$work/install.log"
mkdir -p "$prefix/share/scalebench/data"
cp -r "$source_dir/data/sotu" "$prefix/share/scalebench/data/"  # what the datasets component installs, one set

echo "== the consumer project against the installed package"
cmake -S "$source_dir/tests/install/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release > "$work/consumer-configure.log" 2>&1 || { cat "$work/consumer-configure.log"; exit 1; }
cmake --build "$work/consumer" > "$work/consumer-build.log" 2>&1 || { cat "$work/consumer-build.log"; exit 1; }
consumer_out=$("$work/consumer/consumer")
echo "$consumer_out"
[[ $consumer_out == "world 4 local_batch 8 micro_batch 2 stages 2" ]] || { echo "consumer printed '$consumer_out'"; exit 1; }

echo "== the module file"
tclsh <<TCL
proc module-whatis {text} {}
proc conflict {args} {}
proc setenv {name value} { puts "setenv \$name \$value" }
proc prepend-path {name value} { puts "prepend-path \$name \$value" }
source "$prefix/share/modulefiles/scalebench/$(sed -n 's/^scalebench \([0-9.]*\) .*/\1/p' <<< "$("$prefix/bin/scalebench" --version)")"
if {![file executable "\$prefix/bin/scalebench"]} { error "module's prefix \$prefix has no bin/scalebench" }
TCL

cat > "$work/tiny.yaml" <<'YAML'
suite: tiny
base: {model: gpt-nano, data: {dataset: sotu}, batch: {global: 8}, steps: 3, eval_every: 0, eval_batches: 1, threads: 1}
cases:
  - {name: one-rank}
  - {name: dp2, strategy: {dp: 2}}
YAML
cat > "$work/case.yaml" <<'YAML'
model: gpt-nano
data: sotu
batch: {global: 8}
strategy: {dp: 2}
YAML

# Everything below runs from $work/elsewhere, with the source tree (and the build inside it)
# hidden when a private mount namespace can be made.
inner=$(cat <<INNER
set -euo pipefail
cd "$work/elsewhere"
exe="$prefix/bin/scalebench"
"\$exe" --version | tee version.txt
grep -q "^resources: $prefix/share/scalebench (install)\$" version.txt
"\$exe" run "$work/tiny.yaml" --out results --progress plain
"\$exe" predict --config "$work/case.yaml" --site this-machine --json > predict.json
python3 -c "import json; p = json.load(open('predict.json')); assert p['feasible'], p; print('predict: step', p['step_time_s'], 's')"
"\$exe" predict --validate megatron-lm-narayanan2021-table1 --json > validate.json
python3 -c "import json; v = json.load(open('validate.json')); assert len(v['rows']) == 10 and v['summary'], v; print('predict --validate:', v['name'], len(v['rows']), 'rows')"
"\$exe" report results/tiny.h5 -o report.html
test -s report.html
"\$exe" submit "$work/tiny.yaml" --site this-machine --dry-run --out jobs > submit.txt
grep -q "$prefix/bin/scalebench" jobs/jobs/*.sh
INNER
)
mkdir -p "$work/elsewhere"
if unshare -m true 2> /dev/null; then
  echo "== installed binary with the source tree hidden ($source_dir under an empty tmpfs)"
  unshare -m bash -c "mount -t tmpfs none '$source_dir' && test -z \"\$(ls -A '$source_dir')\" && $inner"
else
  echo "== installed binary from another folder (no private mount namespace here: the source tree stays visible)"
  bash -c "$inner"
fi
echo "check_install: ok"

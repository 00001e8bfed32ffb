#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The `slurm` ctest of site adaptation: starts the local one-node Slurm cluster
# (jobs/local-slurm), writes a site profile that is this-machine plus scheduler.setup (two
# lines, one of them defining a `module` function: this machine has no module command),
# scheduler.modules (one name with a space and a quote) and scheduler.directives.slurm
# (--exclusive and a --comment: the node has no features, so no --constraint), submits
# tests/jobs/slurm_site_suite.yaml with it and waits. Checked: the job's log shows the setup
# lines and the module load ran before the trainer, in that order, with the module name as
# one word; Slurm took both directives (scontrol show job: OverSubscribe=NO, the comment);
# the collected result (h5py) is status ok.
#   usage: run_slurm_site_setup.sh SCALEBENCH WORK_DIR [TIMEOUT_S]
set -euo pipefail
exe=$1 work=$2 timeout_s=${3:-120}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
state=$work/slurm-state out=$work/slurm-site
mkdir -p "$work"
rm -rf "$state"
trap '"$root/jobs/local-slurm/stop.sh" "$state"' EXIT
eval "$("$root/jobs/local-slurm/start.sh" "$state")"
rm -rf "$out"

# this-machine with the site's additions inserted into its scheduler: section (the kernel
# times file goes beside the copy, where the profile names it)
site=$work/site-adapted.yaml
cp "$root/jobs/sites/this-machine.kernels.csv" "$work/"
awk '{ print } /^scheduler:/ { print "  setup:"
  print "    - '\''module() { echo \"module $*\"; }'\''"
  print "    - echo \"site setup ran in job $SLURM_JOB_ID\""
  print "  modules: [\"test-env/1.0 it'\''s\"]"
  print "  directives: {slurm: [--exclusive, --comment=scalebench-site-directive]}" }' \
  "$root/jobs/sites/this-machine.yaml" > "$site"

"$exe" submit "$root/tests/jobs/slurm_site_suite.yaml" --site "$site" --out "$out"
job=$(squeue -h -o %i | head -1)
[ -n "$job" ] || { echo "slurm site test: no job in the queue after submit" >&2; exit 1; }
deadline=$((SECONDS + timeout_s))
while :; do
  table=$("$exe" status "$out")
  if ! grep -Eq 'PENDING|RUNNING|CONFIGURING|COMPLETING|SUSPENDED' <<<"$table"; then break; fi
  if [ "$SECONDS" -ge "$deadline" ]; then
    echo "$table"; echo "slurm site test: the job is still queued or running after ${timeout_s} s" >&2
    tail -20 "$out"/jobs/*.out >&2 || true
    exit 1
  fi
  sleep 1
done
echo "$table"
log=$out/jobs/nano-site.out
cat "$log"
problems=()
setup_line=$(grep -n -x "site setup ran in job $job" "$log" | cut -d: -f1 | head -1)
module_line=$(grep -n -x "module load test-env/1.0 it's" "$log" | cut -d: -f1 | head -1)
[ -n "$setup_line" ] || problems+=("the setup line did not run (no 'site setup ran in job $job' in the log)")
[ -n "$module_line" ] || problems+=("the module load did not run with its name as one word")
if [ -n "$setup_line" ] && [ -n "$module_line" ] && [ "$setup_line" -ge "$module_line" ]; then
  problems+=("the module load ran before the setup lines")
fi
job_info=$(scontrol show job "$job" -o)
grep -q 'OverSubscribe=NO' <<<"$job_info" || problems+=("--exclusive did not reach Slurm: $(grep -o 'OverSubscribe=[^ ]*' <<<"$job_info")")
grep -q 'Comment=scalebench-site-directive' <<<"$job_info" || problems+=("--comment did not reach Slurm")
if [ ${#problems[@]} -gt 0 ]; then
  printf 'FAIL: %s\n' "${problems[@]}" >&2
  exit 1
fi
"$exe" collect "$out"
/usr/bin/python3 "$root/tests/jobs/check_suite_with_h5py.py" "$out/slurm-site.h5" --expect nano-site=1
echo PASS

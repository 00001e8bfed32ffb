#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`scalebench report` end to end: from a real result file (the cli_train_results fixture), one
HTML file whose seven figures are real PNG images and whose table holds every run; the compression
and transfer section says it has nothing to show for this unpruned, unquantised run (in the
figure's alt and its table); a file name with shell syntax runs nothing; a missing or non-HDF5
input is exit 2 and no report.

Usage: check_report.py SCALEBENCH RESULTS.h5 OUT_DIR
"""
import base64
import os
import re
import shutil
import subprocess
import sys

scalebench, results, out_dir = sys.argv[1:4]
FIGURES = ["fig-throughput", "fig-breakdown", "fig-memory", "fig-prediction", "fig-accuracy", "fig-tradeoff",
           "fig-compression"]
problems = []


def report(files, out):
    if os.path.exists(out):
        os.remove(out)
    return subprocess.run([scalebench, "report", *files, "-o", out], capture_output=True, text=True)


# the same run twice under two names (one with shell syntax): two table rows, nothing executed
odd = os.path.join(out_dir, "run $(touch sb_report_injected) 'q'.h5")
shutil.copyfile(results, odd)
injected = os.path.join(os.getcwd(), "sb_report_injected")
if os.path.exists(injected):
    os.remove(injected)
out = os.path.join(out_dir, "report.html")
r = report([results, odd], out)
if r.returncode != 0 or not os.path.exists(out):
    sys.exit(f"FAIL: report exited {r.returncode}: {r.stderr[-1000:]}")
page = open(out, encoding="utf-8").read()
for fig in FIGURES:
    m = re.search(rf"id='{fig}'[^>]*src='data:image/png;base64,([^']+)'", page)
    if not m:
        problems.append(f"{fig} missing")
        continue
    data = base64.b64decode(m.group(1))
    if not data.startswith(b"\x89PNG\r\n\x1a\n") or len(data) < 2000:
        problems.append(f"{fig}: not a PNG of substance ({len(data)} bytes)")
    else:
        print(f"{fig}: PNG of {len(data)} bytes")
rows = re.findall(r"<tr><td>", page.split("id=\"runs\"")[1].split("</table>")[0]) if 'id="runs"' in page else []
if len(rows) != 2:
    problems.append(f"the run table has {len(rows)} rows, not 2")
compression = re.search(r"<img id='fig-compression' alt='([^']*)'", page)
if not compression or compression.group(1) != "compression: no pruned or int8-quantised run":
    problems.append(f"fig-compression's alt is {compression and compression.group(1)!r}, not the no-data sentence")
if not re.search(r'<table id="compression">.*?<td>none of these files holds a distilled', page, re.S):
    problems.append("the compression table is missing or does not say it holds none")
tradeoff = re.findall(r"<tr><td>", page.split('id="tradeoff"')[1].split("</table>")[0]) if 'id="tradeoff"' in page else []
if len(tradeoff) != 2:
    problems.append(f"the memory against step time table has {len(tradeoff)} rows, not 2")
provenance = page.split('<table id="provenance">')[1].split("</table>")[0] if 'id="provenance"' in page else ""
if len(re.findall(r"<tr><td>", provenance)) != 1:  # the two copies of one run share a machine and build
    problems.append(f"the provenance table is not one machine's row: {provenance[:300]!r}")
warnings = re.search(r'<ul id="warnings">(.*?)</ul>', page, re.S)
if not warnings:
    problems.append("no warnings list")
if "no run carries a feasible prediction" in page:
    problems.append("the prediction figure found no prediction in a train file")
if os.path.exists(injected) or os.path.exists(os.path.join(out_dir, "sb_report_injected")):
    problems.append("a file name's shell syntax ran")

# bad input: one clear sentence, exit 2, no report
not_hdf5 = os.path.join(out_dir, "not_results.h5")
with open(not_hdf5, "w") as f:
    f.write("not an HDF5 file\n")
for name, files, message in [("missing", [os.path.join(out_dir, "absent.h5")], "does not exist"),
                             ("not_hdf5", [not_hdf5], "is not an HDF5 file")]:
    bad_out = os.path.join(out_dir, f"bad_{name}.html")
    r = report(files, bad_out)
    if r.returncode != 2 or message not in r.stderr or os.path.exists(bad_out):
        problems.append(f"{name}: exit {r.returncode}, report written {os.path.exists(bad_out)}, stderr {r.stderr[-300:]!r}")

if problems:
    sys.exit("FAIL: " + "; ".join(problems))
print("PASS")

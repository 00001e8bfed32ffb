#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`scalebench report` end to end: from a real result file (the cli_train_results fixture), one
HTML file whose figures are real PNG images (a loss-curve image per model) and whose table holds
every run; the compression and transfer section is left out for this unpruned, unquantised run
(no heading, figure or table; the left-out line, id="left-out", names it); a file name with shell
syntax runs nothing; a missing or non-HDF5 input is exit 2 and no report. Those figures are
checked as `--static` PNGs, then as the interactive plotly charts of the default report where
python3-plotly is installed (a plot <div> per figure with data in its traces, plotly.js inlined). Then a suite-like file of three copies of that run, their
throughput set apart (x2, x1, x0.5, step time to match) and one marked oversubscribed, and two
more as the repeats of one noisy case (/repeats/rep): its ranking table (id="ranking-<model>" in
id="ranking") lists them fastest first as h5py reads them, with the unit in the header, the case
as one row (median ± ci95, marked noisy), the oversubscribed row marked, and the cost per million
tokens from the price its prediction records (none: no cost column, as in the first report).

Usage: check_report.py SCALEBENCH RESULTS.h5 OUT_DIR
"""
import base64
import html
import json
import os
import re
import shutil
import subprocess
import sys

import h5py

scalebench, results, out_dir = sys.argv[1:4]
FIGURES = ["fig-throughput", "fig-breakdown", "fig-memory", "fig-prediction", "fig-accuracy", "fig-tradeoff"]
problems = []


def report(files, out, *options):
    if os.path.exists(out):
        os.remove(out)
    return subprocess.run([scalebench, "report", *files, "-o", out, *options], capture_output=True, text=True)


# the same run twice under two names (one with shell syntax): two table rows, nothing executed
odd = os.path.join(out_dir, "run $(touch sb_report_injected) 'q'.h5")
shutil.copyfile(results, odd)
injected = os.path.join(os.getcwd(), "sb_report_injected")
if os.path.exists(injected):
    os.remove(injected)
out = os.path.join(out_dir, "report.html")
r = report([results, odd], out, "--static")
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
if "cost per million" in page:
    problems.append("a cost column though no run's prediction records a price")
if "Compression and transfer" in page or "fig-compression" in page or 'id="compression"' in page:
    problems.append("the compression and transfer section is shown though no run has compression data")
if not re.search(r"<p id='left-out'>[^<]*compression and transfer", page):
    problems.append("the left-out line does not name the compression and transfer section")
with h5py.File(results, "r") as f:
    models = sorted({f["runs"][k].attrs["model"] for k in f["runs"]})
models = [m.decode() if isinstance(m, bytes) else str(m) for m in models]
for model in models:
    m = re.search(rf"id='fig-loss-{re.escape(model)}'[^>]*src='data:image/png;base64,([^']+)'", page)
    if not m or not base64.b64decode(m.group(1)).startswith(b"\x89PNG") or len(m.group(1)) < 2000:
        problems.append(f"no loss-curve image for {model}")
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



def cells(row):
    return [html.unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<td>(.*?)</td>", row, re.S)]


# a suite-like file: the real run three times, its throughput set apart, one marked oversubscribed
ranked = os.path.join(out_dir, "ranked.h5")
with h5py.File(results, "r") as src, h5py.File(ranked, "w") as dst:
    for k, v in src.attrs.items():
        dst.attrs[k] = v
    run_id = next(iter(src["runs"]))
    # and a case run twice (rep.r1, rep.r2) whose /repeats/rep is noisy: one row, median ± ci95
    for name, factor, over in [("half", 0.5, 1), ("same", 1.0, 0), ("double", 2.0, 0), ("rep.r1", 1.5, 0),
                               ("rep.r2", 1.6, 0)]:
        src.copy(src["runs"][run_id], dst.require_group("runs"), name=name)
        s = dst["runs"][name]["summary"].attrs
        for key in ("tokens_per_s", "samples_per_s"):
            s[key] = s[key] * factor
        for key in ("step_time_median_s", "step_time_p5_s", "step_time_p95_s"):
            s[key] = s[key] / factor
        dst["runs"][name]["context"].attrs["oversubscribed"] = over
        # a priced site's prediction, as predict records one (jobs/sites/a100-80gb-dgx.yaml, 1 device)
        dst["runs"][name]["prediction"].attrs["cost_per_hour"] = 5.12
        dst["runs"][name]["prediction"].attrs["currency"] = "USD"
        if name.startswith("rep."):
            dst["runs"][name].attrs.update({"case": "rep", "repeat": int(name[-1]), "repeats": 2})
    steps = [float(dst["runs"][n]["summary"].attrs["step_time_median_s"]) for n in ("rep.r1", "rep.r2")]
    mean, half = sum(steps) / 2, 12.706 * abs(steps[0] - steps[1]) / 2 ** 0.5 / 2 ** 0.5  # t(0.975, 1)·s/√n
    dst.require_group("repeats/rep").attrs.update(
        {"repeats": 2, "finished": 2, "step_time_median_s": mean, "step_time_mean_s": mean,
         "step_time_ci95_low_s": mean - half, "step_time_ci95_high_s": mean + half,
         "step_time_range_pct": 100 * abs(steps[0] - steps[1]) / mean, "noisy": 1, "noise_bound_pct": 5.0})
with h5py.File(ranked, "r") as f:  # the expected order, as a user's script reads the file
    cases = {}  # a case with /repeats/<case> is one row (its first run), ranked by its runs' median
    for k in f["runs"]:
        case = f["runs"][k].attrs.get("case", k)
        case = case.decode() if isinstance(case, bytes) else str(case)
        cases.setdefault(case if case in f.get("repeats", {}) else k, []).append(k)
    median = lambda ks: sorted(float(f["runs"][k]["summary"].attrs["tokens_per_s"]) for k in ks)[len(ks) // 2] \
        if len(ks) % 2 else sum(float(f["runs"][k]["summary"].attrs["tokens_per_s"]) for k in ks) / len(ks)
    expected = [sorted(ks)[0] for ks in sorted(cases.values(), key=lambda ks: -median(ks))]
    noisy = {sorted(ks)[0] for c, ks in cases.items() if c in f.get("repeats", {})}
    ranked_throughput = {sorted(ks)[0]: median(ks) for ks in cases.values()}
    oversubscribed = {k for k in f["runs"] if int(f["runs"][k]["context"].attrs["oversubscribed"])}
    model = f["runs"][expected[0]].attrs["model"]
    model = model.decode() if isinstance(model, bytes) else str(model)
ranked_out = os.path.join(out_dir, "ranked.html")
r = report([ranked], ranked_out, "--static")
if r.returncode != 0:
    problems.append(f"ranked report exited {r.returncode}: {r.stderr[-500:]}")
else:
    page = open(ranked_out, encoding="utf-8").read()
    div = re.search(r'<div id="ranking">(.*?)</div>', page, re.S)
    table = div and re.search(rf'<table id="ranking-{re.escape(model)}" class="ranking"[^>]*>(.*?)</table>',
                              div.group(1), re.S)
    if not table:
        problems.append(f"no ranking table for {model}")
    else:
        header = re.findall(r"<th>(.*?)</th>", table.group(1))
        rows = re.findall(r"<tr[^>]*data-run='([^']*)'[^>]*>(.*?)</tr>", table.group(1), re.S)
        order = [run for run, _ in rows]
        throughput = header.index(next(h for h in header if h.startswith("throughput")))
        if order != expected:
            problems.append(f"ranking rows are {order}, not fastest first {expected}")
        if not any("tokens/s" in h for h in header) or any("samples/s" in h for h in header):
            problems.append(f"ranking header does not give tokens/s alone: {header}")
        if [cells(row)[0] for _, row in rows] != [str(k) for k in range(1, len(rows) + 1)]:
            problems.append("ranking's rank column is not 1..n")
        for run, row in rows:
            if ("noisy" in cells(row)[-1]) != (run in noisy) or (run in noisy) != ("±" in cells(row)[throughput]):
                problems.append(f"ranking row {run}: marks {cells(row)[-1]!r}, throughput {cells(row)[throughput]!r}, "
                                f"a noisy case's repeats {run in noisy}")
            if ("oversubscribed" in cells(row)[-1]) != (run in oversubscribed):
                problems.append(f"ranking row {run}: marks {cells(row)[-1]!r}, oversubscribed {run in oversubscribed}")
        cost = [k for k, h in enumerate(header) if h.startswith("cost per million tokens")]
        if len(cost) != 1 or "USD" not in header[cost[0]]:
            problems.append(f"no cost per million tokens (USD) column though the prediction records a price: {header}")
        else:
            for run, row in (row for row in rows if row[0] in ranked_throughput):  # others: the order fails
                want = 5.12 / (3600 * ranked_throughput[run]) * 1e6
                got = float(cells(row)[cost[0]].split()[0])
                if abs(got - want) > 1e-3 * want:
                    problems.append(f"{run}: cost per million tokens {got}, not {want:.4g}")
        shown = [float(cells(row)[throughput].split()[0].replace(",", "")) for _, row in rows]
        if shown != sorted(shown, reverse=True):
            problems.append(f"ranking throughput column is not descending: {shown}")
    if not re.search(rf"id='fig-loss-{re.escape(model)}'", page):
        problems.append("the ranked report has no loss-curve image")

# the same report interactive (the default where Debian's python3-plotly is installed): each
# figure a <div class="sb-plot"> drawn by Plotly.newPlot with traces holding data, plotly.js
# inlined (no <script src>, nothing fetched), and no PNG left for those figures
try:
    import plotly  # noqa: F401
    has_plotly = True
except ImportError:
    has_plotly = False
live_out = os.path.join(out_dir, "report_interactive.html")
r = report([results, odd], live_out)
if r.returncode != 0:
    problems.append(f"interactive report exited {r.returncode}: {r.stderr[-500:]}")
else:
    page = open(live_out, encoding="utf-8").read()
    if not has_plotly:
        if "Plotly.newPlot" in page or not re.search(r"id='fig-throughput'[^>]*src='data:image/png", page):
            problems.append("without plotly the report is not the static one")
    else:
        if "<script src" in page or "plotly.js v" not in page:
            problems.append("plotly.js is not inlined in the interactive report (or a script is fetched)")
        for fig in FIGURES + [f"fig-loss-{m}" for m in models]:
            if not re.search(rf"<div id='{re.escape(fig)}' class='sb-plot'", page):
                problems.append(f"interactive {fig}: no plot <div>")
                continue
            m = re.search(rf"<div id='{re.escape(fig)}' class='sb-plot'[^>]*></div><script[^>]*>\(function\(\)"
                          rf"\{{var f=(\{{.*?\}});Plotly\.newPlot\(\"{re.escape(fig)}\"", page, re.S)
            if not m:
                problems.append(f"interactive {fig}: no Plotly.newPlot for its <div>")
                continue
            data = json.loads(m.group(1).replace("<\\/", "</"))["data"]
            points = sum(len(t.get("x") or t.get("y") or []) for t in data)
            if not data or points == 0:
                problems.append(f"interactive {fig}: {len(data)} traces, {points} points")
            else:
                print(f"{fig}: interactive, {len(data)} traces, {points} points")
            if re.search(rf"id='{re.escape(fig)}'[^>]*src='data:image/png", page):
                problems.append(f"interactive {fig}: a PNG too")
        if "id='figures-kind'" not in page or "interactive" not in page.split("id='figures-kind'")[1][:200]:
            problems.append("the interactive report does not say its figures are interactive")

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

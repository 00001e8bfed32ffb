#!/usr/bin/python3
"""One HTML report of scalebench result files, figures embedded (`scalebench report` runs this).

Figures, each an <img id="fig-..."> holding a PNG:
  fig-throughput   throughput against devices per model, strategy and precision, and the scaling
                   efficiency against the group's smallest run (weak or strong, as the runs were)
  fig-breakdown    median step time split into compute, communication, bubble and optimizer
  fig-memory       tracked memory per rank by category (params, grads, optimizer, activations,
                   workspace, comm)
  fig-prediction   the cost model's predicted step time against the measured one, with the error
  fig-accuracy     final held-out (text) or test (images) accuracy per run, grouped by precision
and a table of every run (id="runs"). Reads HDF5 only (h5py); plots with matplotlib (Agg).

Usage: /usr/bin/python3 analysis/report.py RESULTS.h5 [...] -o report.html [--title T]
Exit status: 0 written; 2 on a file that is not a scalebench result file or holds no run.
"""
import argparse
import base64
import html
import io
import os
import sys
import tempfile

import h5py
import numpy as np

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

CATEGORIES = ["params", "grads", "optimizer", "activations", "workspace", "comm"]
PARTS = [("compute_s", "compute"), ("comm_s", "communication"), ("bubble_s", "bubble"), ("optimizer_s", "optimizer")]


def text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def strategy_kind(r):
    used = [k for k in ("dp", "tp", "pp") if r[k] > 1]
    return "×".join(used) if used else "one rank"


def load_runs(paths):
    runs = []
    for path in paths:
        try:
            f = h5py.File(path, "r")
        except OSError as e:
            raise SystemExit(f"report: {path} is not an HDF5 file ({e})")
        with f:
            if "runs" not in f or len(f["runs"]) == 0:
                raise SystemExit(f"report: {path} holds no scalebench run (no /runs group)")
            for run_id, g in f["runs"].items():
                a = g.attrs
                r = {"file": os.path.basename(path), "id": run_id, "model": text(a.get("model", "?")),
                     "dataset": text(a.get("dataset", "?")), "precision": text(a.get("precision", "fp32")),
                     "dp": int(a.get("dp", 1)), "tp": int(a.get("tp", 1)), "pp": int(a.get("pp", 1)),
                     "world": int(a.get("world_size", 1)), "status": text(a.get("status", "?")),
                     "global_batch": int(a.get("global_batch", 0))}
                s = g["summary"].attrs if "summary" in g else {}
                r["step_s"] = float(s.get("step_time_median_s", np.nan))
                tokens = float(s.get("tokens_per_s", 0) or 0)
                r["gpt"] = tokens > 0
                r["throughput"] = tokens if r["gpt"] else float(s.get("samples_per_s", np.nan))
                r["unit"] = "tokens/s" if r["gpt"] else "samples/s"
                r["mfu"] = float(s.get("mfu", np.nan))
                r["final_loss"] = float(s.get("final_loss", np.nan))
                r["accuracy"] = float(s.get("final_accuracy", np.nan))
                r["parts"] = {}
                if "steps" in g and len(g["steps"]) > 0:
                    steps = g["steps"][:]
                    tail = steps[1:] if len(steps) > 1 else steps  # the first step pays page faults
                    for field, name in PARTS:
                        r["parts"][name] = float(np.median(tail[field]))
                r["memory"] = g["memory"][:] if "memory" in g else None
                p = g["prediction"].attrs if "prediction" in g else {}
                r["predicted_s"] = float(p["step_time_s"]) if int(p.get("feasible", 0)) else np.nan
                r["error_pct"] = float(p.get("error_step_time_pct", np.nan))
                r["memory_error_pct"] = float(p.get("error_memory_pct", np.nan))
                runs.append(r)
    return runs


def png(fig):
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode()


def no_data(title, why):
    fig, ax = plt.subplots(figsize=(6, 1.6))
    ax.axis("off")
    ax.text(0.5, 0.5, f"{title}: {why}", ha="center", va="center")
    return fig


def figure_throughput(runs):
    ok = [r for r in runs if r["status"] == "ok" and np.isfinite(r["throughput"])]
    if not ok:
        return no_data("throughput", "no finished run")
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.2))
    # a curve: one model, data set and precision at one batch per data-parallel replica (weak
    # scaling over dp; tp and pp split the same batch), starting from the one-rank run of it
    groups = {}
    for r in ok:
        per_replica = r["global_batch"] // max(r["dp"], 1)
        groups.setdefault((r["model"], r["dataset"], r["precision"], per_replica), []).append(r)
    for (model, dataset, precision, per_replica), members in sorted(groups.items()):
        kinds = {}
        for r in members:
            kinds.setdefault(strategy_kind(r), []).append(r)
        base = kinds.pop("one rank", [])
        if not kinds:
            kinds = {"one rank": []}
        for kind, rs in sorted(kinds.items()):
            curve = sorted(({r["world"]: r for r in base + rs}).values(), key=lambda r: r["world"])
            label = f"{model} {precision} {kind}, batch {per_replica}/replica"
            x = [r["world"] for r in curve]
            y = [r["throughput"] for r in curve]
            left.plot(x, y, marker="o", label=label)
            first = curve[0]
            # per-device throughput against the smallest run's: 1 is perfect scaling
            eff = [(r["throughput"] / r["world"]) / (first["throughput"] / first["world"]) for r in curve]
            right.plot(x, eff, marker="o", label=label)
    left.set_xlabel("devices (ranks)")
    left.set_ylabel("tokens/s (GPT) or samples/s (ResNet)")
    left.set_yscale("log")
    left.set_title("throughput")
    right.set_xlabel("devices (ranks)")
    right.set_ylabel("per-device throughput / smallest run's")
    right.axhline(1.0, color="grey", lw=0.8, ls="--")
    right.set_title("scaling efficiency")
    right.legend(fontsize=7, loc="best")
    return fig


def figure_breakdown(runs):
    rs = [r for r in runs if r["parts"]]
    if not rs:
        return no_data("time breakdown", "no steps recorded")
    fig, ax = plt.subplots(figsize=(max(6, 0.55 * len(rs) + 2), 4.2))
    bottom = np.zeros(len(rs))
    for _, name in PARTS:
        values = np.array([r["parts"][name] * 1e3 for r in rs])
        ax.bar(range(len(rs)), values, bottom=bottom, label=name)
        bottom += values
    ax.set_xticks(range(len(rs)), [r["id"] for r in rs], rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("median step time (ms)")
    ax.set_title("where the step goes")
    ax.legend(fontsize=8)
    return fig


def figure_memory(runs):
    rows = []
    for r in runs:
        if r["memory"] is None:
            continue
        for m in r["memory"]:
            rows.append((f"{r['id']} / rank {int(m['rank'])}", [float(m[c]) / 2**20 for c in CATEGORIES]))
    if not rows:
        return no_data("memory", "no memory table")
    fig, ax = plt.subplots(figsize=(8, max(2.5, 0.22 * len(rows) + 1)))
    left = np.zeros(len(rows))
    for k, category in enumerate(CATEGORIES):
        values = np.array([row[1][k] for row in rows])
        ax.barh(range(len(rows)), values, left=left, label=category)
        left += values
    ax.set_yticks(range(len(rows)), [row[0] for row in rows], fontsize=6)
    ax.invert_yaxis()
    ax.set_xlabel("tracked MiB")
    ax.set_title("memory per rank by category")
    ax.legend(fontsize=7, loc="lower right")
    return fig


def figure_prediction(runs):
    rs = [r for r in runs if np.isfinite(r["predicted_s"]) and np.isfinite(r["step_s"])]
    if not rs:
        return no_data("prediction", "no run carries a feasible prediction")
    fig, ax = plt.subplots(figsize=(6, 5))
    measured = np.array([r["step_s"] for r in rs]) * 1e3
    predicted = np.array([r["predicted_s"] for r in rs]) * 1e3
    ax.scatter(measured, predicted)
    for r, x, y in zip(rs, measured, predicted):
        ax.annotate(f"{r['id']} ({r['error_pct']:+.0f}%)", (x, y), fontsize=6, xytext=(3, 3), textcoords="offset points")
    low, high = min(measured.min(), predicted.min()) / 1.5, max(measured.max(), predicted.max()) * 1.5
    ax.plot([low, high], [low, high], color="grey", lw=0.8, ls="--", label="prediction = measurement")
    ax.fill_between([low, high], [low * 0.85, high * 0.85], [low * 1.15, high * 1.15], color="grey", alpha=0.15,
                    label="±15%")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measured median step (ms)")
    ax.set_ylabel("predicted step (ms)")
    ax.set_title("cost model against measurement")
    ax.legend(fontsize=7)
    return fig


def figure_accuracy(runs):
    rs = [r for r in runs if np.isfinite(r["accuracy"]) and r["accuracy"] > 0]
    if not rs:
        return no_data("accuracy", "no evaluation recorded")
    rs = sorted(rs, key=lambda r: (r["precision"], r["model"], r["id"]))
    colours = {p: plt.cm.tab10(i) for i, p in enumerate(sorted({r["precision"] for r in rs}))}
    fig, ax = plt.subplots(figsize=(max(6, 0.5 * len(rs) + 2), 4))
    ax.bar(range(len(rs)), [100 * r["accuracy"] for r in rs], color=[colours[r["precision"]] for r in rs])
    ax.set_xticks(range(len(rs)), [r["id"] for r in rs], rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("final held-out / test accuracy (%)")
    ax.set_title("accuracy per precision (next-byte accuracy for the GPT)")
    for p, c in colours.items():
        ax.bar([], [], color=c, label=p)
    ax.legend(fontsize=8)
    return fig


def number(x, fmt):
    return "" if x is None or (isinstance(x, float) and not np.isfinite(x)) else format(x, fmt)


def runs_table(runs):
    head = ["file", "run", "model", "data", "precision", "dp", "tp", "pp", "status", "median step (ms)",
            "throughput", "MFU", "final loss", "accuracy", "predicted step (ms)", "step error", "memory error"]
    rows = []
    for r in runs:
        cells = [r["file"], r["id"], r["model"], r["dataset"], r["precision"], r["dp"], r["tp"], r["pp"], r["status"],
                 number(r["step_s"] * 1e3, ".2f"), f"{number(r['throughput'], '.4g')} {r['unit']}",
                 number(100 * r["mfu"], ".1f") + ("%" if np.isfinite(r["mfu"]) else ""),
                 number(r["final_loss"], ".4f"), number(100 * r["accuracy"], ".2f"),
                 number(r["predicted_s"] * 1e3, ".2f"), number(r["error_pct"], "+.1f"),
                 number(r["memory_error_pct"], "+.1f")]
        rows.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
    return ('<table id="runs"><thead><tr>' + "".join(f"<th>{html.escape(h)}</th>" for h in head) +
            "</tr></thead><tbody>\n" + "\n".join(rows) + "\n</tbody></table>")


def main():
    parser = argparse.ArgumentParser(description="HTML report of scalebench result files")
    parser.add_argument("files", nargs="+")
    parser.add_argument("-o", "--out", required=True)
    parser.add_argument("--title", default="scalebench report")
    args = parser.parse_args()
    for path in args.files:
        if not os.path.isfile(path):
            print(f"report: {path} does not exist", file=sys.stderr)
            return 2
    try:
        runs = load_runs(args.files)
    except SystemExit as e:
        print(e, file=sys.stderr)
        return 2
    figures = [("fig-throughput", "Throughput and scaling efficiency", figure_throughput),
               ("fig-breakdown", "Time breakdown", figure_breakdown),
               ("fig-memory", "Memory by category per rank", figure_memory),
               ("fig-prediction", "Predicted against measured", figure_prediction),
               ("fig-accuracy", "Accuracy per precision", figure_accuracy)]
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(args.title)}</title>",
             "<style>body{font-family:sans-serif;margin:2em} table{border-collapse:collapse;font-size:12px}"
             " td,th{border:1px solid #ccc;padding:2px 6px} img{max-width:100%}</style></head><body>",
             f"<h1>{html.escape(args.title)}</h1>",
             f"<p>{len(runs)} runs from {', '.join(html.escape(os.path.basename(p)) for p in args.files)}.</p>"]
    for fig_id, title, make in figures:
        parts.append(f"<h2>{html.escape(title)}</h2><img id='{fig_id}' alt='{html.escape(title)}' "
                     f"src='data:image/png;base64,{png(make(runs))}'>")
    parts.append("<h2>Every run</h2>" + runs_table(runs) + "</body></html>")
    # written beside the target and renamed: never a half-written report
    out_dir = os.path.dirname(os.path.abspath(args.out))
    with tempfile.NamedTemporaryFile("w", dir=out_dir, suffix=".tmp", delete=False, encoding="utf-8") as tmp:
        tmp.write("\n".join(parts))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp.name, 0o666 & ~umask)
    os.replace(tmp.name, args.out)
    print(f"report: {len(runs)} runs, {len(figures)} figures -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

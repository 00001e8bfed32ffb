#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""One HTML report of scalebench result files, figures embedded (`scalebench report` runs this).
One self-contained file: where Debian's python3-plotly is installed the figures are interactive
plotly charts (analysis/interactive_figures.py; plotly.js inlined in the head, no network), each
a <div id="fig-..." class="sb-plot"> and the script drawing it; without plotly, or with
--static, each is the matplotlib <img id="fig-..."> described below (a PNG). <p id="figures-kind">
says which.

"Ranking of the strategies per model" (<div id="ranking">): per model, a table
(id="ranking-<model>", class="ranking", data-unit the throughput's unit) of its finished runs
fastest first, by tokens/s for a GPT and samples/s for a ResNet (never one column): strategy,
throughput, median step time, the largest rank's tracked peak memory (/runs/<id>/memory), final
accuracy and held-out loss, the cost model's predicted step and its error, cost per million tokens
(images) only where the run's prediction records a price (cost_per_hour and currency), and marks
(oversubscribed, noisy). A case run more than once (/repeats/<case>) is one row: the repeats'
median step time ± half its 95% interval, their median throughput ± the same share, ranked by it.
Each row's data-run names its (first) run and data-throughput holds the figure it is ranked by.

"Stragglers" (table id="stragglers", a row per rank with data-run and data-rank): each rank that
`scalebench inspect --json` names (src/validate/stragglers.cpp: compute per step at its CPU
share, step by step against its stage's other ranks, beyond the threshold and the spread), or a
line saying no run of more than one rank has one; left out when no run has more than one rank
or no scalebench executable is at hand (--scalebench, given by `scalebench report`, or PATH).

Figures (static: each an <img id="fig-..."> holding a PNG):
  fig-throughput   throughput against devices per model, strategy and precision, one row of panels
                   per unit (tokens/s, samples/s), with error bars from each run's p5/p95 step time
                   (or its case's repeats' ci95), and the scaling efficiency against the group's
                   smallest run; oversubscribed runs hollow-ringed
  fig-breakdown    each run's median step split into compute, communication, bubble and optimizer,
                   as a share of the step (stacked to 100%; the step's length in its label)
  fig-memory       tracked memory per rank by category (params, grads, optimizer, activations,
                   workspace, comm)
  fig-prediction   the cost model's predicted step time against the measured one, with the error
  fig-accuracy     final held-out (text) or test (images) accuracy per run, grouped by precision
  fig-loss-<model> (section "Loss and accuracy against step") per model, every run's training loss
                   (/steps) and held-out / test loss and accuracy (/eval) against step, the legend
                   outside the axes
  fig-tradeoff     (section "Memory against step time") each run's largest tracked memory of a
                   rank against its median step time, one marker per strategy (grid, ZeRO stage,
                   recomputation, interleaving, sequence parallelism, 16-bit gradients, precision)
                   per model and batch: the trade-off a user chooses between; with a table
                   (id="tradeoff") of the same figures and each run's memory by category
  fig-compression  (section "Compression and transfer", left out when no file holds a pruned or
                   int8 run or a distillation or transfer comparison) test accuracy against the
                   sparsity reached for each pruned run, right after pruning (step 0) and after
                   fine-tuning, beside the dense model (the same model and data from scratch, mean
                   over its runs); and each int8-quantised run's weight size and accuracy (held-out
                   loss for text) against fp32's
A "Warnings" list (id="warnings") names what could mislead a reader: an oversubscribed run (more
ranks × threads than CPUs), a run that did not finish, a run whose held-out loss is far above its
training loss (more than 1.5 times), a run of fewer timed steps than 5, and a case whose repeats
are noisy (/repeats/<case>); "Provenance" (id="provenance") lists each distinct machine and build
the runs come from (hosts, CPU, GPU, MPI, BLAS, compiler, build type, commit, runs).
With, in the compression section, a table (id="compression") of each distilled student against the same
model alone and each fine-tuned configuration against from scratch (means over seeds with every
seed's figure, and whether it beats it) and of each int8 run (size, accuracy, inference speed
against fp32) - the rows and comparisons of analysis/compression_report.py, imported - and a
table of every run (id="runs"). A section with nothing to show is left out (no heading, no
image); a line (id="left-out") after the run table says which and why.
Reads HDF5 (h5py) and inspect's JSON; plots with plotly, or matplotlib (Agg).

Usage: /usr/bin/python3 analysis/report.py RESULTS.h5 [...] -o report.html [--title T] [--static]
       [--scalebench EXE]
Exit status: 0 written; 2 on a file that is not a scalebench result file or holds no run.
"""
import argparse
import base64
import html
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy as np

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import compression_report  # noqa: E402  (analysis/, beside this file)

CATEGORIES = ["params", "grads", "optimizer", "activations", "workspace", "comm"]
PARTS = [("compute_s", "compute"), ("comm_s", "communication"), ("bubble_s", "bubble"), ("optimizer_s", "optimizer")]


def text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def strategy_kind(r):
    used = [k for k in ("dp", "tp", "pp") if r[k] > 1]
    return "×".join(used) if used else "one rank"


def strategy_label(r, attrs):
    """The strategy a run chose, in the words of its config keys: "dp2 tp2 zero1 recompute=full",
    "pp2 m4 1f1b"."""
    words = [f"{k}{r[k]}" for k in ("dp", "tp", "pp") if r[k] > 1] or ["one rank"]
    if int(attrs.get("zero", 0)) > 0:
        words.append(f"zero{int(attrs['zero'])}")
    if r["pp"] > 1:  # two pipelines of one size differ by their micro-batches and schedule
        words.append(f"m{int(attrs.get('micro_batches', 1))}")
        if "schedule" in attrs:
            words.append(text(attrs["schedule"]))
    if r["pp"] > 1 and int(attrs.get("interleave", 1)) > 1:
        words.append(f"interleave{int(attrs['interleave'])}")
    if text(attrs.get("recompute", "none")) != "none":
        words.append(f"recompute={text(attrs['recompute'])}")
    if int(attrs.get("sequence_parallel", 0)):
        words.append("sp")
    if text(attrs.get("main_grads", "fp32")) != "fp32":
        words.append(f"grads={text(attrs['main_grads'])}")
    if r["precision"] != "fp32":
        words.append(r["precision"])
    return " ".join(words)


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
                r["context"] = {k: text(v) for k, v in g["context"].attrs.items()} if "context" in g else {}
                r["timed_steps"] = max(0, len(g["steps"]) - 1) if "steps" in g else 0
                r["eval_loss"] = float(s.get("final_eval_loss", np.nan))
                r["strategy"] = strategy_label(r, a)
                p = g["prediction"].attrs if "prediction" in g else {}
                r["predicted_s"] = float(p["step_time_s"]) if int(p.get("feasible", 0)) else np.nan
                r["error_pct"] = float(p.get("error_step_time_pct", np.nan))
                r["memory_error_pct"] = float(p.get("error_memory_pct", np.nan))
                r["outside_band"] = int(p.get("step_time_outside_band", 0)) == 1  # train: measured vs band
                r["step_p5_s"] = float(s.get("step_time_p5_s", np.nan))
                r["step_p95_s"] = float(s.get("step_time_p95_s", np.nan))
                r["case"] = text(a.get("case", run_id))
                r["repeats"] = int(a.get("repeats", 1))
                # recorded by the trainer in the context (thread allocation), and in the run id it names
                r["oversubscribed"] = (r["context"].get("oversubscribed") in ("1", "True", "true") or
                                       "oversubscribed" in run_id)
                # a price only where the prediction carries one (the site's price_per_device_hour)
                r["cost_per_hour"] = float(p.get("cost_per_hour", np.nan)) if "currency" in p else np.nan
                r["currency"] = text(p.get("currency", ""))
                r["steps"] = g["steps"][:] if "steps" in g and len(g["steps"]) > 0 else None
                r["eval"] = g["eval"][:] if "eval" in g and len(g["eval"]) > 0 else None
                runs.append(r)
    return runs


PROVENANCE = [("hostnames", "hosts"), ("cpu_model", "CPU"), ("gpu_model", "GPU"), ("mpi_library", "MPI"),
              ("blas", "BLAS"), ("compiler", "compiler"), ("build_type", "build"), ("git_sha", "commit")]


def load_repeats(paths):
    """Each suite file's /repeats/<case> groups: (file, case, attributes)."""
    rows = []
    for path in paths:
        with h5py.File(path, "r") as f:
            if "repeats" in f:
                for case, g in f["repeats"].items():
                    rows.append((os.path.basename(path), case, dict(g.attrs)))
    return rows


def warnings_list(runs, repeats):
    items = []
    for r in runs:
        if r["context"].get("oversubscribed") in ("1", "True", "true"):
            items.append(f"{r['id']}: oversubscribed ({r['context'].get('node_ranks', '?')} ranks × "
                         f"{r['context'].get('threads', '?')} threads on {r['context'].get('node_cpus', '?')} CPUs): "
                         "its timings are not one thread per core")
        if r["status"] != "ok":
            items.append(f"{r['id']}: ended {r['status']}; its figures cover the steps it ran")
        if np.isfinite(r["eval_loss"]) and np.isfinite(r["final_loss"]) and r["eval_loss"] > 1.5 * r["final_loss"]:
            why = "overfitting, or too few evaluation batches"
            if r["model"].startswith("resnet"):  # evaluation runs BatchNorm on its running statistics
                why = ("early in training, BatchNorm's running statistics, which evaluation uses, can lag the "
                       "batch statistics training uses; or overfitting, or too few evaluation batches")
            items.append(f"{r['id']}: held-out loss {r['eval_loss']:.3f} is {r['eval_loss'] / r['final_loss']:.1f} times "
                         f"the training loss {r['final_loss']:.3f} ({why})")
        if r["status"] == "ok" and r["timed_steps"] < 5:
            items.append(f"{r['id']}: {r['timed_steps']} timed steps after the first: its step time is a small sample")
    for file, case, a in repeats:
        if int(a.get("noisy", 0)):
            items.append(f"{case} ({file}): its {int(a['finished'])} repeats span {float(a['step_time_range_pct']):.1f}% "
                         f"of their median step time, beyond {float(a['noise_bound_pct']):.0f}%")
    body = "".join(f"<li>{html.escape(i)}</li>" for i in items) or "<li>none</li>"
    return f'<ul id="warnings">{body}</ul>'


def provenance_table(runs):
    machines = {}
    for r in runs:
        key = tuple(r["context"].get(k, "") for k, _ in PROVENANCE)
        machines.setdefault(key, []).append(r["id"])
    head = "<tr>" + "".join(f"<th>{name}</th>" for _, name in PROVENANCE) + "<th>runs</th></tr>"
    body = "".join("<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in key) +
                   f"<td>{html.escape(', '.join(ids))}</td></tr>" for key, ids in machines.items())
    return f'<table id="provenance">{head}{body}</table>'


def png(fig):
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode()


def image(fig_id, title, fig):
    """The figure as an <img> holding its PNG; its alt is the title, or why there is nothing to show."""
    alt = html.escape(getattr(fig, "sb_no_data", title), quote=True)
    return f"<img id='{fig_id}' alt='{alt}' src='data:image/png;base64,{png(fig)}'>"


def no_data(title, why):
    fig, ax = plt.subplots(figsize=(6, 1.6))
    ax.axis("off")
    ax.text(0.5, 0.5, f"{title}: {why}", ha="center", va="center")
    fig.sb_no_data = f"{title}: {why}"  # the page says it too (the <img> alt)
    return fig


def unit_words(r):
    """What a run's throughput counts: tokens for a GPT, images (samples) for a ResNet."""
    return ("tokens/s", "tokens") if r["gpt"] else ("samples/s", "images")


def finite(x):
    return x is not None and np.isfinite(x)


def ranking_entries(runs, repeats):
    """One entry per case of a file: a run alone, or a case's repeats as one entry whose step time
    is /repeats/<case>'s median with ± half its 95% interval (throughput: the repeats' median,
    its ± the same share). Only finished runs with a throughput."""
    # a case run once has /repeats/<case> too (its interval the run itself): no ± to show
    spread = {(file, case): a for file, case, a in repeats if int(a.get("finished", 1)) > 1}
    groups = {}
    for r in runs:
        if r["status"] != "ok" or not finite(r["throughput"]):
            continue
        key = (r["file"], r["case"]) if (r["file"], r["case"]) in spread else (r["file"], r["id"])
        groups.setdefault(key, []).append(r)
    entries = []
    for key, members in groups.items():
        first = members[0]
        e = {"model": first["model"], "gpt": first["gpt"], "unit": first["unit"], "strategy": first["strategy"],
             "ids": [r["id"] for r in members], "file": first["file"],
             "oversubscribed": any(r["oversubscribed"] for r in members), "noisy": False, "repeats": 1,
             "outside_band": any(r["outside_band"] for r in members),
             "throughput": float(np.median([r["throughput"] for r in members])),
             "step_s": float(np.median([r["step_s"] for r in members])), "step_pm_s": np.nan,
             "peak_mib": max((peak_rank_mib(r) for r in members if r["memory"] is not None and len(r["memory"])),
                             default=np.nan),
             "accuracy": float(np.median([r["accuracy"] for r in members])),
             "eval_loss": float(np.median([r["eval_loss"] for r in members])),
             "predicted_s": float(np.median([r["predicted_s"] for r in members])),
             "cost_per_hour": first["cost_per_hour"], "currency": first["currency"]}
        a = spread.get(key)
        if a is not None:
            e["repeats"] = int(a.get("finished", len(members)))
            e["step_s"] = float(a["step_time_median_s"])
            e["step_pm_s"] = (float(a["step_time_ci95_high_s"]) - float(a["step_time_ci95_low_s"])) / 2
            e["noisy"] = bool(int(a.get("noisy", 0)))
        e["throughput_pm"] = e["throughput"] * e["step_pm_s"] / e["step_s"] if finite(e["step_pm_s"]) else np.nan
        e["error_pct"] = (100 * (e["predicted_s"] - e["step_s"]) / e["step_s"]
                          if finite(e["predicted_s"]) and finite(e["step_s"]) and e["step_s"] > 0 else np.nan)
        # cost per million tokens (images): the devices' price per hour over what an hour trains
        e["cost_per_million"] = (e["cost_per_hour"] / (3600 * e["throughput"]) * 1e6
                                 if finite(e["cost_per_hour"]) and e["cost_per_hour"] > 0 and e["currency"] else np.nan)
        entries.append(e)
    return entries


def rate(x):
    """A throughput as a reader compares them: whole units from 100 up (18,439), else 4 digits."""
    return f"{x:,.0f}" if abs(x) >= 100 else format(x, ".4g")


def ranking_section(runs, repeats):
    """Per model (GPT runs in tokens/s, ResNets in samples/s, never one column), the strategies
    ranked by throughput, fastest first: <table id="ranking-<model>" class="ranking"> inside
    <div id="ranking">; each row's data-throughput holds the figure it is ranked by."""
    entries = ranking_entries(runs, repeats)
    if not entries:
        return ""
    parts = ['<div id="ranking">']
    for model, gpt in sorted({(e["model"], e["gpt"]) for e in entries}):
        rows = sorted((e for e in entries if (e["model"], e["gpt"]) == (model, gpt)),
                      key=lambda e: -e["throughput"])
        unit, counted = unit_words(rows[0])
        any_repeats = any(e["repeats"] > 1 for e in rows)
        priced = [e for e in rows if finite(e["cost_per_million"])]
        currencies = sorted({e["currency"] for e in priced})
        head = ["rank", "strategy", "run", f"throughput ({unit})" + (" median ± ci95" if any_repeats else ""),
                "median step (ms)" + (" ± ci95" if any_repeats else ""), "largest rank's tracked peak (MiB)",
                "accuracy (%)", "final eval loss", "predicted step (ms)", "prediction error (%)"]
        if priced:
            head.append(f"cost per million {counted} ({'/'.join(currencies)})")
        head.append("marks")
        body = []
        for k, e in enumerate(rows, 1):
            marks = (["oversubscribed"] if e["oversubscribed"] else []) + (["noisy"] if e["noisy"] else []) + \
                (["outside prediction band"] if e["outside_band"] else [])
            thr = rate(e["throughput"]) + (f" ± {rate(e['throughput_pm'])}" if finite(e["throughput_pm"]) else "")
            step = number(e["step_s"] * 1e3, ".2f") + \
                (f" ± {1e3 * e['step_pm_s']:.2f}" if finite(e["step_pm_s"]) else "")
            runs_text = ", ".join(e["ids"]) + (f" ({e['repeats']} repeats)" if e["repeats"] > 1 else "")
            cells = [k, e["strategy"], runs_text, thr, step, number(e["peak_mib"], ".1f"),
                     number(100 * e["accuracy"], ".2f") if finite(e["accuracy"]) and e["accuracy"] > 0 else "",
                     number(e["eval_loss"], ".4f"), number(e["predicted_s"] * 1e3, ".2f"),
                     number(e["error_pct"], "+.1f")]
            if priced:
                cells.append(f"{e['cost_per_million']:.4g} {e['currency']}" if finite(e["cost_per_million"]) else "")
            cells.append(", ".join(marks))
            cls = " class='oversubscribed'" if e["oversubscribed"] else ""
            body.append(f"<tr{cls} data-run='{html.escape(e['ids'][0], quote=True)}' "
                        f"data-throughput='{e['throughput']:.6g}'>" +
                        "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
        slug = "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in model)
        parts.append(f"<h3>{html.escape(model)} ({unit})</h3>"
                     f'<table id="ranking-{slug}" class="ranking" data-unit="{unit}"><thead><tr>' +
                     "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr></thead><tbody>\n" +
                     "\n".join(body) + "\n</tbody></table>")
    parts.append("</div>")
    return "".join(parts)


def run_label(r):
    return f"{r['id']} (oversubscribed)" if r["oversubscribed"] else r["id"]


def curve_runs(runs, model):
    """The runs of one model with a loss curve, by id, and each one's held-out / test evaluations
    (the /eval rows of another split than train), for the loss and accuracy curves."""
    rs = sorted((r for r in runs if r["model"] == model and (r["steps"] is not None or r["eval"] is not None)),
                key=lambda r: r["id"])
    held_out = {}
    for r in rs:
        if r["eval"] is not None:
            split = np.array([text(x) for x in r["eval"]["split"]])
            held = r["eval"][split != "train"]
            if len(held):
                held_out[r["id"]] = held
    return rs, held_out


def figure_curves(runs, model):
    """Training loss (solid) and held-out / test loss (dashed, from /eval) against step for each run
    of one model, and held-out / test accuracy against step; one colour per run, the legend outside
    the axes (right of them)."""
    rs, held_out = curve_runs(runs, model)
    has_accuracy = any(np.any(np.isfinite(h["accuracy"])) for h in held_out.values())
    fig, axes = plt.subplots(1, 2 if has_accuracy else 1, figsize=(12 if has_accuracy else 7, 4), squeeze=False)
    loss_ax = axes[0][0]
    handles = []
    for k, r in enumerate(rs):
        colour = plt.cm.tab10(k % 10) if len(rs) <= 10 else plt.cm.tab20(k % 20)
        if r["steps"] is not None:
            loss_ax.plot(r["steps"]["step"], r["steps"]["loss"], color=colour, lw=1)
        held = held_out.get(r["id"])
        if held is not None:
            loss_ax.plot(held["step"], held["loss"], color=colour, lw=1, ls="--", marker="o", ms=3)
            if has_accuracy and np.any(np.isfinite(held["accuracy"])):
                axes[0][1].plot(held["step"], 100 * held["accuracy"], color=colour, ls="--", marker="o", ms=3)
        handles.append(matplotlib.lines.Line2D([], [], color=colour, lw=2, label=run_label(r)))
    handles.append(matplotlib.lines.Line2D([], [], color="black", lw=1, label="solid: training loss"))
    handles.append(matplotlib.lines.Line2D([], [], color="black", lw=1, ls="--", marker="o", ms=3,
                                           label="dashed: held-out / test"))
    loss_ax.set_xlabel("step")
    loss_ax.set_ylabel("loss")
    loss_ax.set_title(f"{model}: loss")
    if has_accuracy:
        axes[0][1].set_xlabel("step")
        axes[0][1].set_ylabel("held-out / test accuracy (%)")
        axes[0][1].set_title(f"{model}: accuracy")
    fig.tight_layout()
    fig.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 0.95))
    return fig


def curve_models(runs):
    return sorted({r["model"] for r in runs if r["steps"] is not None or r["eval"] is not None})


def throughput_error(r):
    """Lower and upper throughput of a run from its step time's p5 and p95 (a faster step, more
    throughput); nan where the summary has neither."""
    if finite(r["step_p5_s"]) and finite(r["step_p95_s"]) and r["step_p5_s"] > 0 and finite(r["step_s"]):
        return r["throughput"] - r["throughput"] * r["step_s"] / r["step_p95_s"], \
            r["throughput"] * r["step_s"] / r["step_p5_s"] - r["throughput"]
    return np.nan, np.nan


def throughput_curves(ok, unit, spread):
    """The curves of one unit's panel, drawn alike by matplotlib and plotly: one per model, data
    set, precision, batch per replica and strategy kind, through the fastest run at each size
    (x devices, y throughput, low/high its error bar, eff the scaling efficiency against the
    curve's smallest run, over the indices of oversubscribed points) with the other runs of that
    size (others) beside it."""
    # a curve: one model, data set and precision at one batch per data-parallel replica (weak
    # scaling over dp; tp and pp split the same batch), starting from the one-rank run of it
    groups = {}
    for r in (r for r in ok if r["unit"] == unit):
        per_replica = r["global_batch"] // max(r["dp"], 1)
        groups.setdefault((r["model"], r["dataset"], r["precision"], per_replica), []).append(r)
    curves = []
    for (model, dataset, precision, per_replica), members in sorted(groups.items()):
        kinds = {}
        for r in members:
            kinds.setdefault(strategy_kind(r), []).append(r)
        base = kinds.pop("one rank", [])
        if not kinds:
            kinds = {"one rank": []}
        for kind, rs in sorted(kinds.items()):
            fastest = {}
            for r in sorted(base + rs, key=lambda r: r["throughput"]):
                fastest[r["world"]] = r
            curve = sorted(fastest.values(), key=lambda r: r["world"])
            low, high = [], []
            for r in curve:
                a = spread.get((r["file"], r["case"]))
                if a is not None and r["repeats"] > 1:  # the case's repeats: their ci95 of the step
                    half = (float(a["step_time_ci95_high_s"]) - float(a["step_time_ci95_low_s"])) / 2
                    m = float(a["step_time_median_s"])
                    low.append(r["throughput"] * half / m)
                    high.append(r["throughput"] * half / m)
                else:
                    lo, hi = throughput_error(r)
                    low.append(lo)
                    high.append(hi)
            first = curve[0]
            curves.append({
                "label": f"{model} on {dataset} {precision} {kind}, batch {per_replica}/replica", "runs": curve,
                "x": np.array([r["world"] for r in curve]), "y": np.array([r["throughput"] for r in curve]),
                "low": np.array(low, dtype=float), "high": np.array(high, dtype=float),
                # per-device throughput against the smallest run's: 1 is perfect scaling
                "eff": np.array([(r["throughput"] / r["world"]) / (first["throughput"] / first["world"])
                                 for r in curve]),
                "over": [k for k, r in enumerate(curve) if r["oversubscribed"]],
                "others": [r for r in base + rs if fastest[r["world"]] is not r]})
    return curves


def throughput_units(runs):
    """The finished runs with a throughput, and their units (tokens/s first)."""
    ok = [r for r in runs if r["status"] == "ok" and np.isfinite(r["throughput"])]
    return ok, sorted({r["unit"] for r in ok}, reverse=True)


def figure_throughput(runs, repeats=()):
    """Throughput against devices, one panel per unit (tokens/s for GPTs, samples/s for ResNets:
    never one axis), with error bars from each run's p5/p95 step time, or its case's repeats' ci95;
    and per unit the scaling efficiency against each curve's smallest run. Oversubscribed runs
    are hollow markers."""
    ok, units = throughput_units(runs)
    if not ok:
        return no_data("throughput", "no finished run")
    spread = {(file, case): a for file, case, a in repeats}
    fig, axes = plt.subplots(len(units), 2, figsize=(13, 4.2 * len(units)), squeeze=False)
    for (left, right), unit in zip(axes, units):
        any_others = False
        for c in throughput_curves(ok, unit, spread):
            x, y, over, others = c["x"], c["y"], c["over"], c["others"]
            line = left.plot(x, y, marker="o", label=c["label"])[0]
            if np.any(np.isfinite(c["low"])):
                left.errorbar(x, y, yerr=[np.nan_to_num(c["low"]), np.nan_to_num(c["high"])], fmt="none",
                              ecolor=line.get_color(), capsize=3, lw=0.8)
            right.plot(x, c["eff"], marker="o", label=c["label"], color=line.get_color())
            if others:
                any_others = True
                left.scatter([r["world"] for r in others], [r["throughput"] for r in others], marker="x",
                             color=line.get_color(), zorder=3)
                ringed = [r for r in others if r["oversubscribed"]]
                left.scatter([r["world"] for r in ringed], [r["throughput"] for r in ringed], s=110,
                             facecolors="none", edgecolors=line.get_color(), zorder=3)
            for ax, ys in ((left, y), (right, c["eff"])):
                if over:
                    ax.scatter(x[over], ys[over], s=110, facecolors="white", edgecolors=line.get_color(),
                               zorder=3)
        if any_others:
            left.scatter([], [], marker="x", color="black", label="x: another run of the curve at that size")
        if any(r["oversubscribed"] for r in ok if r["unit"] == unit):
            left.scatter([], [], s=110, facecolors="white", edgecolors="black", label="hollow: oversubscribed")
        worlds = sorted({r["world"] for r in ok if r["unit"] == unit})
        for ax in (left, right):
            ax.set_xticks(worlds)
        left.set_xlabel("devices (ranks)")
        left.set_ylabel(unit)
        left.set_yscale("log")
        left.set_title(f"throughput ({unit}), bars: p5-p95 step or repeats' ci95")
        right.set_xlabel("devices (ranks)")
        right.set_ylabel("per-device throughput / smallest run's")
        right.axhline(1.0, color="grey", lw=0.8, ls="--")
        right.set_title(f"scaling efficiency ({unit})")
        left.legend(fontsize=7, loc="upper left", bbox_to_anchor=(0, -0.15))
    fig.tight_layout()
    return fig


def figure_breakdown(runs):
    """Each run's median step split into compute, communication, bubble and optimizer as a share of
    their sum (stacked to 100%), so a 5 ms step and a 240 ms one compare; the step's length in the
    tick label."""
    rs = [r for r in runs if r["parts"] and sum(r["parts"].values()) > 0]
    if not rs:
        return no_data("time breakdown", "no steps recorded")
    fig, ax = plt.subplots(figsize=(max(6, 0.55 * len(rs) + 2), 4.2))
    bottom = np.zeros(len(rs))
    totals = np.array([sum(r["parts"].values()) for r in rs])
    for _, name in PARTS:
        values = 100 * np.array([r["parts"][name] for r in rs]) / totals
        ax.bar(range(len(rs)), values, bottom=bottom, label=name)
        bottom += values
    ax.set_xticks(range(len(rs)), [f"{run_label(r)} ({1e3 * t:.3g} ms)" for r, t in zip(rs, totals)], rotation=60,
                  ha="right", fontsize=7)
    ax.set_ylim(0, 100)
    ax.set_ylabel("share of the median step (%)")
    ax.set_title("where the step goes")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
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


def peak_rank_mib(r):
    """The largest tracked peak of any rank (MiB): what must fit on each device."""
    return max(float(m["peak_tracked"]) for m in r["memory"]) / 2**20


def tradeoff_runs(runs):
    return [r for r in runs if r["memory"] is not None and len(r["memory"]) and np.isfinite(r["step_s"])]


def figure_tradeoff(runs):
    rows = tradeoff_runs(runs)
    if not rows:
        return no_data("memory against step time", "no run with a memory table and timed steps")
    groups = sorted({(r["model"], r["global_batch"]) for r in rows})
    fig, axes = plt.subplots(1, len(groups), figsize=(5.5 * len(groups), 4), squeeze=False)
    for ax, (model, batch) in zip(axes[0], groups):
        group = [r for r in rows if (r["model"], r["global_batch"]) == (model, batch)]
        for k, r in enumerate(sorted(group, key=lambda r: r["strategy"])):
            ax.scatter(r["step_s"] * 1e3, peak_rank_mib(r), marker="os^vD<>ph*"[k % 10], s=40,
                       label=r["strategy"] + (" (oversubscribed)" if r["oversubscribed"] else ""))
        ax.set_xlabel("median step time (ms)")
        ax.set_ylabel("largest tracked memory of a rank (MiB)")
        ax.set_title(f"{model}, global batch {batch}")
        ax.legend(fontsize=6)
    fig.tight_layout()
    return fig


def tradeoff_table(runs):
    rows = tradeoff_runs(runs)
    head = ("<tr><th>model</th><th>batch</th><th>strategy</th><th>ms/step</th><th>largest rank MiB</th>" +
            "".join(f"<th>{c} MiB</th>" for c in CATEGORIES) + "<th>run</th></tr>")
    body = []
    for r in sorted(rows, key=lambda r: (r["model"], r["global_batch"], r["step_s"])):
        heaviest = max(r["memory"], key=lambda m: float(m["peak_tracked"]))
        cells = [r["model"], r["global_batch"], r["strategy"], number(r["step_s"] * 1e3, ".1f"),
                 number(peak_rank_mib(r), ".1f"), *(number(float(heaviest[c]) / 2**20, ".1f") for c in CATEGORIES),
                 r["id"]]
        body.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
    return f'<table id="tradeoff">{head}{"".join(body)}</table>'


def figure_prediction(runs):
    rs = [r for r in runs if np.isfinite(r["predicted_s"]) and np.isfinite(r["step_s"])]
    if not rs:
        return no_data("prediction", "no run carries a feasible prediction")
    fig, ax = plt.subplots(figsize=(6, 5))
    measured = np.array([r["step_s"] for r in rs]) * 1e3
    predicted = np.array([r["predicted_s"] for r in rs]) * 1e3
    ax.scatter(measured, predicted)
    # a number beside each point and the runs in the legend: names beside close points piled up
    for k, (r, x, y) in enumerate(zip(rs, measured, predicted), 1):
        ax.annotate(str(k), (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
        ax.scatter([], [], marker=f"${k}$", color="black", label=f"{run_label(r)} ({r['error_pct']:+.0f}%)")
    low, high = min(measured.min(), predicted.min()) / 1.5, max(measured.max(), predicted.max()) * 1.5
    ax.plot([low, high], [low, high], color="grey", lw=0.8, ls="--", label="prediction = measurement")
    ax.fill_between([low, high], [low * 0.85, high * 0.85], [low * 1.15, high * 1.15], color="grey", alpha=0.15,
                    label="±15%")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measured median step (ms)")
    ax.set_ylabel("predicted step (ms)")
    ax.set_title("cost model against measurement")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1))
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


def load_compression(paths):
    """Per result file: compression_report's rows of its finished runs, its int8 rows and its
    distillation and transfer comparisons (kind, comparison)."""
    files = []
    for path in paths:
        name = os.path.basename(path)
        rows, _ = compression_report.run_rows(path)
        files.append({"file": name, "rows": [dict(r, file=name) for r in rows],
                      "int8": [dict(r, file=name) for r in compression_report.int8_rows(path)],
                      "comparisons": [("distillation", c) for c in compression_report.distillation_comparisons(rows)] +
                                     [("transfer", c) for c in compression_report.transfer_comparisons(rows)]})
    return files


def dense_reference(rows, pruned):
    """The dense model a pruned run is held against: its file's runs of the same model and data
    from scratch, neither pruned nor distilled; their mean final accuracy and how many (0: none)."""
    dense = [r for r in rows if r["file"] == pruned["file"] and (r["model"], r["dataset"]) ==
             (pruned["model"], pruned["dataset"]) and r["from"] == "scratch" and not r["pattern"]
             and not r["distilled"] and np.isfinite(r["final"])]
    return (float(np.mean([r["final"] for r in dense])) if dense else np.nan), len(dense)


def plot_pruning(ax, rows, pruned):
    # one colour per run, its figures in the legend (labels beside the points collide: 2:4 and
    # unstructured 50% reach the same sparsity, fine-tuned accuracies lie within a point)
    for k, r in enumerate(pruned):
        colour = plt.cm.tab10(k % 10)
        x = r["sparsity"]
        before = f"step 0 {100 * r['start']:.2f}% -> " if np.isfinite(r["start"]) else ""
        ax.plot([x, x], [100 * r["start"], 100 * r["final"]], color=colour, lw=0.8, ls=":")
        ax.scatter([x], [100 * r["start"]], marker="v", color=colour)
        ax.scatter([x], [100 * r["final"]], marker="o", color=colour,
                   label=f"{r['name']} ({r['pattern']}, {x:.3f}): {before}final {100 * r['final']:.2f}%")
    ax.scatter([], [], marker="v", color="grey", label="triangle: right after pruning (step 0)")
    ax.scatter([], [], marker="o", color="grey", label="circle: after fine-tuning")
    references = {(r["file"], r["model"], r["dataset"]): dense_reference(rows, r) for r in pruned}
    for k, ((file, model, dataset), (accuracy, count)) in enumerate(sorted(references.items())):
        if count:
            ax.axhline(100 * accuracy, color="black", lw=0.9, ls=["--", "-.", ":"][k % 3],
                       label=f"dense {model} on {dataset} ({file}, {count} run{'s' if count > 1 else ''}): "
                             f"{100 * accuracy:.2f}%")
    ax.set_xlim(0, 1)
    ax.set_xlabel("sparsity reached (fraction of prunable weights at zero)")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title("pruning: accuracy against sparsity")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(0, -0.13))  # below: the points use the whole plot


def plot_int8(ax, int8, metric):
    for r in int8:
        x = (r["bytes_fp32"] / 2**10, r["bytes_int8"] / 2**10)
        y = (r["scale"] * r["fp32"], r["scale"] * r["int8"])
        ax.annotate("", xy=(x[1], y[1]), xytext=(x[0], y[0]), arrowprops={"arrowstyle": "->", "color": "grey"})
        change = f"{y[1] - y[0]:+.2f} points" if metric == "accuracy" else f"{y[1] - y[0]:+.4f} loss"
        ax.annotate(f"{r['file']}/{r['name']}: {r['ratio']:.2f}x smaller, {change}, "
                    f"{compression_report.speed_ratio(r):.2f}x samples/s",
                    (x[1], y[1]), fontsize=6, xytext=(4, -10), textcoords="offset points")
    ax.scatter([r["bytes_fp32"] / 2**10 for r in int8], [r["scale"] * r["fp32"] for r in int8], marker="s",
               color="tab:blue", label="fp32")
    ax.scatter([r["bytes_int8"] / 2**10 for r in int8], [r["scale"] * r["int8"] for r in int8], marker="D",
               color="tab:orange", label="int8")
    ax.set_xlim(0, 1.15 * max(r["bytes_fp32"] for r in int8) / 2**10)
    ax.set_xlabel("weight bytes (KiB)")
    ax.set_ylabel("test accuracy (%)" if metric == "accuracy" else "held-out loss")
    ax.set_title(f"int8 against fp32: size and {'accuracy' if metric == 'accuracy' else 'held-out loss'}")
    ax.legend(fontsize=7)


def figure_compression(compression):
    rows = [r for f in compression for r in f["rows"]]
    pruned = [r for r in rows if r["pattern"] and np.isfinite(r["sparsity"])]
    int8 = [r for f in compression for r in f["int8"]]
    metrics = sorted({r["metric"] for r in int8})
    if not pruned and not int8:
        return no_data("compression", "no pruned or int8-quantised run")
    panels = len(metrics) + (1 if pruned else 0)
    fig, axes = plt.subplots(1, panels, figsize=(6.5 * panels, 4.8), squeeze=False)
    axes = list(axes[0])
    if pruned:
        plot_pruning(axes.pop(0), rows, pruned)
    for metric, ax in zip(metrics, axes):
        plot_int8(ax, [r for r in int8 if r["metric"] == metric], metric)
    return fig


def has_compression(compression):
    """Whether any file holds a pruned or int8 run, or a distillation or transfer comparison."""
    return any(f["int8"] or f["comparisons"] or any(r["pattern"] and np.isfinite(r["sparsity"]) for r in f["rows"])
               for f in compression)


def compression_table(compression):
    treated_names = {"distillation": "with the teacher", "transfer": "fine-tuned"}
    head = ["kind", "file", "what", "baseline", "compressed / transferred", "difference", "verdict"]
    rows = []
    for f in compression:
        for kind, c in f["comparisons"]:
            if "reference_mean" in c:
                cells = [kind, f["file"], c["label"], f"{c['reference_name']}: {c['reference_text']}",
                         f"{treated_names[kind]}: {c['treated_text']}", f"{c['gain_points']:+.2f} points",
                         "beats it" if c["failure"] is None else "does not beat it"]
            else:
                cells = [kind, f["file"], c["label"], "none", f"{treated_names[kind]}: {c['treated_text']}", "",
                         c["failure"]]
            rows.append(cells)
        for r in f["int8"]:
            shown = (lambda v: f"accuracy {r['scale'] * v:.2f}%") if r["metric"] == "accuracy" else \
                (lambda v: f"held-out loss {v:.4f}")
            rows.append([r["quantize"], f["file"], r["name"],
                         f"fp32: {r['bytes_fp32'] / 2**10:.1f} KiB, {shown(r['fp32'])}, "
                         f"{r['samples_per_s_fp32']:.4g} samples/s",
                         f"{r['quantize']}: {r['bytes_int8'] / 2**10:.1f} KiB, {shown(r['int8'])}, "
                         f"{r['samples_per_s_int8']:.4g} samples/s",
                         f"{r['ratio']:.2f}x smaller, " +
                         (f"{100 * (r['int8'] - r['fp32']):+.2f} points" if r["metric"] == "accuracy" else
                          f"{r['int8'] - r['fp32']:+.4f} loss") + ", "
                         f"{compression_report.speed_ratio(r):.2f}x samples/s", ""])
    if not rows:
        rows.append(["none of these files holds a distilled, fine-tuned (unpruned) or int8-quantised run"] +
                    [""] * (len(head) - 1))
    return ('<table id="compression"><thead><tr>' + "".join(f"<th>{html.escape(h)}</th>" for h in head) +
            "</tr></thead><tbody>\n" +
            "\n".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>" for cells in rows) +
            "\n</tbody></table>")


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


def write_atomically(out, text):
    """Writes text beside out and renames it: never a half-written report; no temporary file left."""
    if os.path.isdir(out):
        raise IsADirectoryError(21, "it is a folder")
    if os.path.exists(out) and not os.path.isfile(out):
        raise OSError(22, "it is not a regular file")  # a device or FIFO is never replaced
    out_dir = os.path.dirname(os.path.abspath(out))
    with tempfile.NamedTemporaryFile("w", dir=out_dir, suffix=".tmp", delete=False, encoding="utf-8") as tmp:
        name = tmp.name
    try:
        with open(name, "w", encoding="utf-8") as f:
            f.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(name, 0o666 & ~umask)
        os.replace(name, out)
    except BaseException:
        os.unlink(name)
        raise


def interactive_module():
    """analysis/interactive_figures.py where Debian's python3-plotly is installed, else None (the
    static matplotlib figures)."""
    sys.modules.setdefault("report", sys.modules[__name__])  # its helpers, not a second copy of this file
    try:
        import interactive_figures
    except ImportError:
        return None
    return interactive_figures


def figures_kind(plotly):
    if plotly:
        return ("Figures are interactive (plotly.js inlined in this file, no network): hover a point for its run, "
                "drag to zoom, double-click to reset, click a legend entry to hide it.")
    return "Figures are static images (matplotlib; install python3-plotly for interactive ones)."


def load_stragglers(paths, scalebench):
    """What `scalebench inspect FILE --json` finds per file: {"rows": [(file, run, straggler,
    threshold)], "judged": the runs judged, "why": why none could be} - the rule lives in one place
    (src/validate/stragglers.cpp). Without the executable (report.py run alone, no scalebench on
    PATH) nothing is judged."""
    exe = scalebench or shutil.which("scalebench")
    if not exe:
        return {"rows": [], "judged": [], "why": "no scalebench executable to run inspect with"}
    rows, judged = [], []
    for path in paths:
        answer = subprocess.run([exe, "inspect", path, "--json"], capture_output=True, text=True)
        if answer.returncode != 0:
            raise SystemExit(f"report: scalebench inspect {path} --json exited {answer.returncode}: "
                             f"{answer.stderr.strip()[-300:]}")
        for run in json.loads(answer.stdout)["runs"]:
            judged.append((os.path.basename(path), run["id"]))
            for st in run.get("stragglers", []):
                rows.append((os.path.basename(path), run["id"], st, float(run["straggler_threshold_pct"])))
    return {"rows": rows, "judged": judged, "why": ""}


def stragglers_section(stragglers, runs):
    """<table id="stragglers">: every rank that computes longer than its stage's other ranks by more
    than the threshold and the steps' spread, as `inspect` names it; or one line saying that no
    multi-rank run has one. Empty (the section left out) where no run has more than one rank or
    nothing could be judged."""
    several = [r for r in runs if r["world"] > 1]
    if not several or stragglers["why"]:
        return ""
    rule = ("A rank is a straggler when its compute per step (its own work before and between its collectives, "
            "the time the others wait for it, in CPU time: /runs/&lt;id&gt;/timeline compute_cpu_s, so the share "
            "of a core the scheduler gave it does not count), taken step by step against the median of its "
            "pipeline stage's other ranks in the same step, is longer by more than the threshold and by more "
            "than the spread of those per-step ratios (as <code>scalebench inspect</code> judges it). Its "
            "collectives (/runs/&lt;id&gt;/collectives) say whom the others waited for: at each collective of a "
            "group the rank that computed longest before it arrived last, and the others waited the difference.")
    if not stragglers["rows"]:
        return (f"<p>{rule}</p><p id='stragglers'>None of the {len(several)} runs of more than one rank has a "
                "straggler.</p>")
    head = ["file", "run", "rank", "pipeline stage", "compute per step (ms)", "stage's other ranks (ms)",
            "excess (%)", "threshold (%)", "spread (%)", "steps", "last at its collectives",
            "others' waits for it (%)"]
    body = []
    for file, run, st, threshold in stragglers["rows"]:
        arrivals = st.get("arrivals")  # from /runs/<id>/collectives; None in files written before it
        cells = [file, run, st["rank"], st["pp_rank"], f"{1e3 * st['compute_s']:.2f}", f"{1e3 * st['others_s']:.2f}",
                 f"{st['excess_pct']:+.0f}", f"{threshold:.0f}", f"{st['spread_pct']:.0f}", st["steps"],
                 f"{arrivals['last_pct']:.0f}% of {arrivals['collectives']}" if arrivals else "-",
                 f"{arrivals['waited_for_pct']:.0f}" if arrivals else "-"]
        body.append(f"<tr data-run='{html.escape(run, quote=True)}' data-rank='{int(st['rank'])}'>" +
                    "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
    names = "; ".join(f"{run}: rank {st['rank']}" for _, run, st, _ in stragglers["rows"])
    return (f"<p>{rule}</p><p class='straggler-names'>Slower than the rest: {html.escape(names)}.</p>"
            '<table id="stragglers"><thead><tr>' + "".join(f"<th>{html.escape(h)}</th>" for h in head) +
            "</tr></thead><tbody>\n" + "\n".join(body) + "\n</tbody></table>")


def stragglers_left_out(stragglers):
    if stragglers["why"]:
        return f"stragglers: {stragglers['why']}"
    return "stragglers: no run of more than one rank"


def main():
    parser = argparse.ArgumentParser(description="HTML report of scalebench result files")
    parser.add_argument("files", nargs="+")
    parser.add_argument("-o", "--out", required=True)
    parser.add_argument("--title", default="scalebench report")
    parser.add_argument("--static", action="store_true", help="matplotlib PNG figures even where plotly is installed")
    parser.add_argument("--scalebench", help="the scalebench executable whose `inspect --json` names the stragglers")
    args = parser.parse_args()
    plotly = None if args.static else interactive_module()
    for path in args.files:
        if not os.path.isfile(path):
            print(f"scalebench: error: report: {path} does not exist", file=sys.stderr)
            return 2
    try:
        runs = load_runs(args.files)
        compression = load_compression(args.files)
        repeats = load_repeats(args.files)
        stragglers = load_stragglers(args.files, args.scalebench)
    except SystemExit as e:
        # one sentence in scalebench's own form, as every other command's
        print(f"scalebench: error: {e}", file=sys.stderr)
        return 2
    figures = [("fig-throughput", "Throughput and scaling efficiency", lambda rs: figure_throughput(rs, repeats),
                lambda: plotly.figure_throughput(runs, repeats)),
               ("fig-breakdown", "Time breakdown (share of the step)", figure_breakdown,
                lambda: plotly.figure_breakdown(runs)),
               ("fig-memory", "Memory by category per rank", figure_memory, lambda: plotly.figure_memory(runs)),
               ("fig-prediction", "Predicted against measured", figure_prediction,
                lambda: plotly.figure_prediction(runs)),
               ("fig-accuracy", "Accuracy per precision", figure_accuracy, lambda: plotly.figure_accuracy(runs))]

    def shown(fig_id, title, fig, make_interactive):
        """The interactive chart where plotly serves, else the matplotlib figure as a PNG."""
        if plotly is None:
            return image(fig_id, title, fig)
        plt.close(fig)
        return plotly.interactive(fig_id, title, make_interactive)
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(args.title)}</title>",
             "<style>body{font-family:sans-serif;margin:2em} table{border-collapse:collapse;font-size:12px}"
             " td,th{border:1px solid #ccc;padding:2px 6px} img{max-width:100%}"
             " tr.oversubscribed td{background:#fff3e0} .sb-plot{margin-bottom:1em}</style>" +
             (plotly.plotly_script() if plotly else "") + "</head><body>",
             f"<h1>{html.escape(args.title)}</h1>",
             f"<p>{len(runs)} runs from {', '.join(html.escape(os.path.basename(p)) for p in args.files)}.</p>",
             f"<p id='figures-kind'>{figures_kind(plotly)}</p>",
             "<h2>Warnings</h2>" + warnings_list(runs, repeats)]
    ranking = ranking_section(runs, repeats)
    if ranking:
        parts.append("<h2>Ranking of the strategies per model</h2><p>Fastest first; a case's repeats as one row "
                     "(their median, ± half the 95% interval). Oversubscribed runs are shaded; their timings are "
                     "not one thread per core.</p>" + ranking)
    straggler_part = stragglers_section(stragglers, runs)
    if straggler_part:
        parts.append("<h2>Stragglers</h2>" + straggler_part)
    count = 0
    left_out = []  # a section with nothing to show has no heading: one line at the end says why
    for fig_id, title, make, make_interactive in figures:
        fig = make(runs)
        if hasattr(fig, "sb_no_data"):
            left_out.append(fig.sb_no_data)
            plt.close(fig)
            continue
        parts.append(f"<h2>{html.escape(title)}</h2>" + shown(fig_id, title, fig, make_interactive))
        count += 1
    models = curve_models(runs)
    if models:
        parts.append("<h2>Loss and accuracy against step</h2>" +
                     "".join(shown(f"fig-loss-{''.join(c if c.isalnum() or c in '-_' else '-' for c in m)}",
                                   f"Loss and accuracy of {m}", figure_curves(runs, m),
                                   lambda m=m: plotly.figure_curves(runs, m)) for m in models))
        count += len(models)
    fig = figure_tradeoff(runs)
    if hasattr(fig, "sb_no_data"):
        left_out.append(fig.sb_no_data)
        plt.close(fig)
    else:
        parts.append("<h2>Memory against step time</h2>" +
                     shown("fig-tradeoff", "Memory against step time", fig, lambda: plotly.figure_tradeoff(runs)) +
                     tradeoff_table(runs))
        count += 1
    if has_compression(compression):  # no heading for a section with nothing in it
        parts.append("<h2>Compression and transfer</h2>" +
                     image("fig-compression", "Compression and transfer", figure_compression(compression)) +
                     compression_table(compression))
        count += 1
    if not has_compression(compression):
        left_out.append("compression and transfer: no pruned, int8-quantised, distilled or fine-tuned run")
    if not straggler_part:
        left_out.append(stragglers_left_out(stragglers))
    parts.append("<h2>Every run</h2>" + runs_table(runs))
    parts.append("<p id='left-out'>Left out, nothing to show: " + html.escape("; ".join(left_out)) + ".</p>"
                 if left_out else "")
    parts.append("<h2>Provenance</h2>" + provenance_table(runs) + "</body></html>")
    # written beside the target and renamed: never a half-written report
    try:
        write_atomically(args.out, "\n".join(parts))
    except OSError as e:
        print(f"scalebench: error: report: cannot write -o '{args.out}': {e.strerror or e}", file=sys.stderr)
        return 2
    print(f"report: {len(runs)} runs, {count} figures ({'interactive' if plotly else 'static'}) -> {args.out}")
    return 0


def main_without_traceback():
    """A file that cannot be read or written is the user's to fix (exit 2); anything else is a fault (3)."""
    try:
        return main()
    except OSError as e:
        print(f"scalebench: error: report: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - one sentence, never a traceback
        print(f"scalebench: internal error: report: {type(e).__name__}: {e}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main_without_traceback())

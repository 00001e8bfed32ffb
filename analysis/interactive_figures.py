# SPDX-License-Identifier: Apache-2.0
"""The report's figures as interactive plotly charts (Debian's python3-plotly): zoom, pan, a run's
figures on hover, a legend entry clicked away. The same data as report.py's matplotlib figures
(its run dicts and throughput curves, imported from there), drawn for a browser; plotly.js is
inlined once into the page, so the file stays self-contained and needs no network.
Leaves out the compression figure (static only) and everything without a figure (tables, text).

Each figure is a <div id="fig-..." class="sb-plot"> followed by the <script> that draws it.
"""
import html
import json

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import plotly.offline
from plotly.subplots import make_subplots

from report import (CATEGORIES, PARTS, curve_runs, peak_rank_mib, run_label, throughput_curves,
                    throughput_units)

COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf"]
SYMBOLS = ["circle", "square", "diamond", "triangle-up", "triangle-down"]
CONFIG = {"displaylogo": False, "responsive": True}


def plotly_script():
    """plotly.js itself, for one <script> in the page's head."""
    return "<script type='text/javascript'>" + plotly.offline.get_plotlyjs() + "</script>"


def div(fig_id, title, fig, height):
    """The figure as a <div id=fig_id class="sb-plot"> and the script drawing it into it."""
    fig.update_layout(template="plotly_white", height=height, margin={"l": 60, "r": 20, "t": 80, "b": 50},
                      font={"size": 11})
    payload = pio.to_json(fig, validate=False).replace("</", "<\\/")  # never closes the <script>
    safe_id = html.escape(fig_id, quote=True)
    return (f"<div id='{safe_id}' class='sb-plot' role='img' aria-label='{html.escape(title, quote=True)}' "
            f"style='width:100%;height:{height}px'></div>"
            f"<script type='text/javascript'>(function(){{var f={payload};"
            f"Plotly.newPlot({json.dumps(fig_id)},f.data,f.layout,{json.dumps(CONFIG)});}})();</script>")


def hover_run(r):
    return f"{r['id']}<br>{r['strategy']}" + ("<br>oversubscribed" if r["oversubscribed"] else "")


def figure_throughput(runs, repeats):
    """Throughput (log axis, error bars) and scaling efficiency per unit, as the static figure."""
    ok, units = throughput_units(runs)
    spread = {(file, case): a for file, case, a in repeats}
    fig = make_subplots(rows=len(units), cols=2, horizontal_spacing=0.1, vertical_spacing=0.3 / len(units),
                        subplot_titles=[t for u in units for t in (f"throughput ({u}), bars: p5-p95 step or "
                                                                    f"repeats' ci95", f"scaling efficiency ({u})")])
    k = 0
    for row, unit in enumerate(units, 1):
        for c in throughput_curves(ok, unit, spread):
            colour = COLOURS[k % len(COLOURS)]
            k += 1
            bars = None
            if np.any(np.isfinite(c["low"])):
                bars = {"type": "data", "symmetric": False, "array": np.nan_to_num(c["high"]).tolist(),
                        "arrayminus": np.nan_to_num(c["low"]).tolist(), "color": colour}
            symbols = ["circle-open" if i in c["over"] else "circle" for i in range(len(c["x"]))]
            hover = [hover_run(r) for r in c["runs"]]
            fig.add_trace(go.Scatter(x=c["x"], y=c["y"], mode="lines+markers", name=c["label"], legendgroup=c["label"],
                                     line={"color": colour}, marker={"symbol": symbols, "size": 9}, error_y=bars,
                                     text=hover, hovertemplate="%{text}<br>%{y:.4g} " + unit + "<extra></extra>"),
                          row=row, col=1)
            fig.add_trace(go.Scatter(x=c["x"], y=c["eff"], mode="lines+markers", name=c["label"],
                                     legendgroup=c["label"], showlegend=False, line={"color": colour},
                                     marker={"symbol": symbols, "size": 9}, text=hover,
                                     hovertemplate="%{text}<br>efficiency %{y:.3f}<extra></extra>"), row=row, col=2)
            if c["others"]:
                fig.add_trace(go.Scatter(x=[r["world"] for r in c["others"]], y=[r["throughput"] for r in c["others"]],
                                         mode="markers", name=f"{c['label']}: other runs at that size",
                                         legendgroup=c["label"], showlegend=False,
                                         marker={"symbol": "x", "color": colour, "size": 9},
                                         text=[hover_run(r) for r in c["others"]],
                                         hovertemplate="%{text}<br>%{y:.4g} " + unit + "<extra></extra>"),
                              row=row, col=1)
        worlds = sorted({r["world"] for r in ok if r["unit"] == unit})
        fig.update_yaxes(type="log", title_text=unit, row=row, col=1)
        fig.update_yaxes(title_text="per-device / smallest run's", row=row, col=2)
        fig.add_hline(y=1.0, line_dash="dash", line_color="grey", row=row, col=2)
        for col in (1, 2):
            fig.update_xaxes(title_text="devices (ranks)", tickvals=worlds, row=row, col=col)
    fig.update_layout(legend={"orientation": "h", "yanchor": "top", "y": -0.12, "x": 0},
                      title="hollow: oversubscribed; x: another run of the curve at that size")
    return fig, 380 * len(units) + 40 * k + 80


def figure_breakdown(runs):
    rs = [r for r in runs if r["parts"] and sum(r["parts"].values()) > 0]
    totals = np.array([sum(r["parts"].values()) for r in rs])
    labels = [f"{run_label(r)} ({1e3 * t:.3g} ms)" for r, t in zip(rs, totals)]
    fig = go.Figure()
    for k, (_, name) in enumerate(PARTS):
        ms = np.array([r["parts"][name] for r in rs]) * 1e3
        fig.add_trace(go.Bar(x=labels, y=100 * ms / (1e3 * totals), name=name, marker_color=COLOURS[k],
                             customdata=ms, hovertemplate="%{x}<br>" + name + " %{y:.1f}% (%{customdata:.3g} ms)"
                                                                              "<extra></extra>"))
    fig.update_layout(barmode="stack", title="where the step goes", yaxis={"title": "share of the median step (%)",
                                                                           "range": [0, 100]},
                      xaxis={"tickangle": -45, "automargin": True})
    return fig, 380 + 6 * max(len(label) for label in labels)  # the slanted labels take their own room


def figure_memory(runs):
    rows = [(f"{r['id']} / rank {int(m['rank'])}", m) for r in runs if r["memory"] is not None for m in r["memory"]]
    fig = go.Figure()
    for k, category in enumerate(CATEGORIES):
        fig.add_trace(go.Bar(y=[name for name, _ in rows], x=[float(m[category]) / 2**20 for _, m in rows],
                             name=category, orientation="h", marker_color=COLOURS[k],
                             hovertemplate="%{y}<br>" + category + " %{x:.2f} MiB<extra></extra>"))
    fig.update_layout(barmode="stack", title="memory per rank by category", xaxis={"title": "tracked MiB"},
                      yaxis={"autorange": "reversed", "automargin": True})
    return fig, max(300, 18 * len(rows) + 140)


def figure_prediction(runs):
    """Predicted against measured; each run's name and error on hover (never a label over another)."""
    rs = [r for r in runs if np.isfinite(r["predicted_s"]) and np.isfinite(r["step_s"])]
    measured = np.array([r["step_s"] for r in rs]) * 1e3
    predicted = np.array([r["predicted_s"] for r in rs]) * 1e3
    low, high = min(measured.min(), predicted.min()) / 1.5, max(measured.max(), predicted.max()) * 1.5
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[low, high, high, low], y=[low * 0.85, high * 0.85, high * 1.15, low * 1.15],
                             mode="lines", fill="toself", fillcolor="rgba(128,128,128,0.15)", line={"width": 0},
                             name="±15%", hoverinfo="skip"))
    fig.add_trace(go.Scatter(x=[low, high], y=[low, high], mode="lines", line={"dash": "dash", "color": "grey"},
                             name="prediction = measurement", hoverinfo="skip"))
    fig.add_trace(go.Scatter(x=measured, y=predicted, mode="markers", name="runs", marker={"size": 9},
                             text=[f"{run_label(r)}<br>error {r['error_pct']:+.1f}%" for r in rs],
                             hovertemplate="%{text}<br>measured %{x:.3g} ms, predicted %{y:.3g} ms<extra></extra>"))
    fig.update_layout(title="cost model against measurement",
                      xaxis={"type": "log", "title": "measured median step (ms)"},
                      yaxis={"type": "log", "title": "predicted step (ms)"})
    return fig, 480


def figure_accuracy(runs):
    rs = sorted((r for r in runs if np.isfinite(r["accuracy"]) and r["accuracy"] > 0),
                key=lambda r: (r["precision"], r["model"], r["id"]))
    fig = go.Figure()
    for k, precision in enumerate(sorted({r["precision"] for r in rs})):
        group = [r for r in rs if r["precision"] == precision]
        fig.add_trace(go.Bar(x=[r["id"] for r in group], y=[100 * r["accuracy"] for r in group], name=precision,
                             marker_color=COLOURS[k % len(COLOURS)],
                             hovertemplate="%{x}<br>%{y:.2f}%<extra></extra>"))
    fig.update_layout(title="accuracy per precision (next-byte accuracy for the GPT)",
                      yaxis={"title": "final held-out / test accuracy (%)"}, xaxis={"tickangle": -45,
                                                                                     "automargin": True})
    return fig, 380 + 6 * max(len(r["id"]) for r in rs)


def figure_curves(runs, model):
    """Training loss (solid), held-out / test loss (dashed) and accuracy against step per run."""
    rs, held_out = curve_runs(runs, model)
    has_accuracy = any(np.any(np.isfinite(h["accuracy"])) for h in held_out.values())
    fig = make_subplots(rows=1, cols=2 if has_accuracy else 1, horizontal_spacing=0.08,
                        subplot_titles=[f"{model}: loss (solid training, dashed held-out / test)"] +
                                       ([f"{model}: held-out / test accuracy"] if has_accuracy else []))
    for k, r in enumerate(rs):
        colour = COLOURS[k % len(COLOURS)]
        name = run_label(r)
        if r["steps"] is not None:
            fig.add_trace(go.Scatter(x=r["steps"]["step"], y=r["steps"]["loss"], mode="lines", name=name,
                                     legendgroup=name, line={"color": colour, "width": 1},
                                     hovertemplate=name + "<br>step %{x}: training loss %{y:.4f}<extra></extra>"),
                          row=1, col=1)
        held = held_out.get(r["id"])
        if held is not None:
            fig.add_trace(go.Scatter(x=held["step"], y=held["loss"], mode="lines+markers", name=name + " held-out",
                                     legendgroup=name, showlegend=r["steps"] is None,
                                     line={"color": colour, "dash": "dash", "width": 1}, marker={"size": 5},
                                     hovertemplate=name + "<br>step %{x}: held-out loss %{y:.4f}<extra></extra>"),
                          row=1, col=1)
            if has_accuracy and np.any(np.isfinite(held["accuracy"])):
                fig.add_trace(go.Scatter(x=held["step"], y=100 * held["accuracy"], mode="lines+markers",
                                         name=name + " accuracy", legendgroup=name, showlegend=False,
                                         line={"color": colour, "dash": "dash", "width": 1}, marker={"size": 5},
                                         hovertemplate=name + "<br>step %{x}: %{y:.2f}%<extra></extra>"),
                              row=1, col=2)
    fig.update_xaxes(title_text="step")
    fig.update_yaxes(title_text="loss", row=1, col=1)
    if has_accuracy:
        fig.update_yaxes(title_text="accuracy (%)", row=1, col=2)
    return fig, 420


def figure_tradeoff(runs):
    rows = [r for r in runs if r["memory"] is not None and len(r["memory"]) and np.isfinite(r["step_s"])]
    groups = sorted({(r["model"], r["global_batch"]) for r in rows})
    cols = min(3, len(groups))  # three panels a row: their titles and ticks stay apart
    grid_rows = (len(groups) + cols - 1) // cols
    fig = make_subplots(rows=grid_rows, cols=cols, subplot_titles=[f"{m}, batch {b}" for m, b in groups],
                        horizontal_spacing=0.09, vertical_spacing=0.35 / grid_rows)
    for k, (model, batch) in enumerate(groups):
        row, col = k // cols + 1, k % cols + 1
        group = sorted((r for r in rows if (r["model"], r["global_batch"]) == (model, batch)),
                       key=lambda r: r["strategy"])
        for j, r in enumerate(group):  # one legend entry per strategy: a screenshot names every point
            fig.add_trace(go.Scatter(x=[r["step_s"] * 1e3], y=[peak_rank_mib(r)], mode="markers",
                                     name=f"{model}, batch {batch}: {r['strategy']}" +
                                          (" (oversubscribed)" if r["oversubscribed"] else ""),
                                     marker={"size": 11, "color": COLOURS[j % len(COLOURS)],
                                             "symbol": SYMBOLS[j // len(COLOURS) % len(SYMBOLS)] +
                                                       ("-open" if r["oversubscribed"] else "")},
                                     text=[hover_run(r)],
                                     hovertemplate="%{text}<br>%{x:.2f} ms, %{y:.1f} MiB<extra></extra>"),
                          row=row, col=col)
        fig.update_xaxes(title_text="median step (ms)", tickformat=".5~g", nticks=5, row=row, col=col)
        fig.update_yaxes(title_text="largest rank (MiB)" if col == 1 else None, row=row, col=col)
    fig.update_layout(title="one marker per strategy; hollow: oversubscribed",
                      legend={"orientation": "h", "yanchor": "top", "y": -0.15 / grid_rows, "x": 0})
    return fig, 340 * grid_rows + 22 * len(rows) // 2 + 120


def interactive(fig_id, title, make):
    """make() -> (plotly figure, height in pixels), as a <div> and its script."""
    fig, height = make()
    return div(fig_id, title, fig, height)


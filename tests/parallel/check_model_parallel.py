#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`scalebench train` under tensor, pipeline and hybrid grids trains the same model as one rank.

Each grid trains 5 steps of the same global batch as a one-rank run and must give the same loss
and gradient norm at every step and the same evaluation after them, within REL_TOL (float sums in another order:
tp all-reduces, pipeline stages, the tied-embedding sum). Also checks the per-rank timeline
(tp communication only under tp, bubble only under pp), the ranks table's grid coordinates, and
the tracked activation memory of the first stage: under GPipe it grows with the micro-batches,
under 1F1B it is bounded by the p micro-batches in flight. Interleaved 1F1B (strategy.interleave
2: pp 2, pp 2 with dp 2 or tp 2, pp 4 on an 8-block model, and pp 2 with 4 chunks) trains the
same, records interleave, and every rank's tracked memory (activations in particular: each chunk
holds its own micro-batches in flight) is the prediction's for that stage within MEMORY_TOL.
Activation recomputation (selective, full) trains the same loss on one rank and on tp, pp and dp
grids, with less tracked activation memory. Sequence parallelism (tp 2, tp 4, dp 2 × tp 2, with
full and selective recomputation, with pp 2 plain and interleaved, with ZeRO-1, 2 and 3) trains the
same, holds fewer activations than tp alone, and tracks the predicted memory. ZeRO 0 to 3 at dp 2 and 4
train the same and hold exactly the ZeRO formulas' model state; so does resnet-mini's ZeRO-2 and 3 (compared
where the gradient sums are the same, as a ReLU network's trajectory amplifies another order); resnet-mini
trains interleaved (pp 2 and 4 × 2 chunks, with full recomputation and with dp 2 ZeRO-1) as one rank (also with
full recomputation and synchronised BatchNorm). resnet-mini's full recomputation (one rank, dp 2, pp 2) trains the
same, tracks its stage's predicted memory and keeps under 60% of the activations. Reads the HDF5
files, never stdout.

Usage: check_model_parallel.py SCALEBENCH MPIEXEC OUT_DIR
"""
import os
import subprocess
import sys

import h5py
import numpy as np

scalebench, mpiexec, out_dir = sys.argv[1:4]
REL_TOL = 1e-4
MEMORY_TOL = 0.05
GPT = ["--set", "model={layers: 4, hidden: 64, heads: 4, seq_len: 32, vocab: 256}", "--set", "data=sotu",
       "--set", "batch.global=8", "--set", "strategy.micro_batches=2", "--set", "eval_batches=2"]
# ResNet runs are evaluated on the first 512 test images: the comparisons need the same images, not the
# accuracy of record, and the whole test set took 3 s of every run
RESNET = ["--set", "model=resnet-mini", "--set", "data={dataset: mnist, test_samples: 512}", "--set", "batch.global=32",
          "--set", "strategy.micro_batches=4", "--set", "eval_batches=1", "--set", "optimizer.type=sgd",
          "--set", "optimizer.lr=0.05"]
COMMON = ["--set", "steps=5", "--set", "threads=1", "--set", "seed=3"]
problems = []


def train(name, model_args, dp=1, tp=1, pp=1, schedule="1f1b", extra=()):
    out = os.path.join(out_dir, f"mp_{name}.h5")
    if os.path.exists(out):
        os.remove(out)
    ranks = dp * tp * pp
    grid = ["--set", f"strategy.dp={dp}", "--set", f"strategy.tp={tp}", "--set", f"strategy.pp={pp}",
            "--set", f"strategy.schedule={schedule}"]
    config = os.path.join(out_dir, "mp_case.yaml")
    with open(config, "w") as f:
        f.write("model: gpt-nano\ndata: sotu\n")
    subprocess.run([mpiexec, "-np", str(ranks), scalebench, "train", "--config", config, "--out", out,
                    *model_args, *COMMON, *grid, *extra], check=True, env=dict(os.environ, SB_PROGRESS="lines"),
                   stdout=subprocess.DEVNULL)
    with h5py.File(out, "r") as f:
        run = f["runs"][list(f["runs"])[0]]
        return {"loss": run["steps"]["loss"][:], "grad_norm": run["steps"]["grad_norm"][:],
                "eval": run["eval"]["loss"][:],
                "accuracy": run["eval"]["accuracy"][:], "timeline": run["timeline"][:],
                "ranks": run["ranks"][:], "memory": run["memory"][:],
                "interleave": int(run.attrs["interleave"]), "prediction": dict(run["prediction"].attrs)}


def relative_gap(a, b):
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-12)))


largest = {}


def compare(name, run, reference, dp, tp, pp, tolerance=REL_TOL, steps=None):
    """The first `steps` steps' loss and gradient norm (all of them by default, and then also the
    evaluation after them)."""
    steps = steps or len(reference["loss"])
    # the gradient norm too: a gradient summed over the wrong ranks (the sequence-parallel
    # LayerNorm ones left per tp rank, say) moves it 2e-4 while AdamW's normalised steps move the
    # loss only 4e-6 in 5 steps
    gap = max(relative_gap(run["loss"][:steps], reference["loss"][:steps]),
              relative_gap(run["grad_norm"][:steps], reference["grad_norm"][:steps]),
              relative_gap(run["eval"], reference["eval"]) if steps == len(reference["loss"]) else 0.0)
    largest[name] = gap
    if gap > tolerance:
        problems.append(f"{name}: loss, gradient norm or eval differs from its reference by {gap:.2e} "
                        f"(> {tolerance})")
    t, r = run["timeline"], run["ranks"]
    if len(t) != 5 * dp * tp * pp:
        problems.append(f"{name}: {len(t)} timeline rows for {dp * tp * pp} ranks x 5 steps")
    if (tp > 1) != bool((t["tp_comm_s"] > 0).all()) or (tp == 1 and (t["tp_comm_s"] != 0).any()):
        problems.append(f"{name}: tp_comm_s {t['tp_comm_s'][:4]} does not match tp={tp}")
    if (pp > 1) != bool((t["bubble_s"] > 0).any()) or (pp == 1 and (t["bubble_s"] != 0).any()):
        problems.append(f"{name}: bubble_s {t['bubble_s'][:4]} does not match pp={pp}")
    expected = [((q // tp) % dp, q % tp, q // (tp * dp)) for q in range(dp * tp * pp)]
    got = list(zip(r["dp_rank"], r["tp_rank"], r["pp_rank"]))
    if got != expected:
        problems.append(f"{name}: ranks coordinates {got} != {expected}")


gpt_one = train("gpt_one", GPT)
for name, dp, tp, pp, schedule in [("gpt_tp2", 1, 2, 1, "1f1b"), ("gpt_tp4", 1, 4, 1, "1f1b"),
                                   ("gpt_pp2_gpipe", 1, 1, 2, "gpipe"), ("gpt_pp2_1f1b", 1, 1, 2, "1f1b"),
                                   ("gpt_pp4_gpipe", 1, 1, 4, "gpipe"), ("gpt_pp4_1f1b", 1, 1, 4, "1f1b"),
                                   ("gpt_2x2x1", 2, 2, 1, "1f1b"), ("gpt_2x1x2", 2, 1, 2, "1f1b"),
                                   ("gpt_1x2x2", 1, 2, 2, "gpipe")]:
    compare(name, train(name, GPT, dp, tp, pp, schedule), gpt_one, dp, tp, pp)
# ZeRO-1 shards each tp rank's optimizer state over dp; the clipping norm spans both groups.
compare("gpt_2x2x1_zero1", train("gpt_2x2x1_zero1", GPT, 2, 2, 1, "1f1b", ["--set", "strategy.zero=1"]),
        gpt_one, 2, 2, 1)


def check_interleaved_memory(name, run, tp, dp, v):
    """Every rank's tracked params, grads, optimizer and activations against the prediction for
    its pipeline stage (prediction.stage_memory_*, from the same plan's chunks)."""
    if run["interleave"] != v:
        problems.append(f"{name}: run.attrs interleave {run['interleave']}, not {v}")
    prediction, memory = run["prediction"], run["memory"]
    for row in memory:
        stage = int(row["rank"]) // (tp * dp)
        for part in ("params", "grads", "optimizer", "activations"):
            predicted = float(prediction[f"stage_memory_{part}"][stage])
            measured = float(row[part])
            if abs(predicted - measured) > MEMORY_TOL * measured:
                problems.append(f"{name}: rank {row['rank']} tracks {measured:.0f} B of {part}, the prediction for "
                                f"stage {stage} says {predicted:.0f} (> {MEMORY_TOL:.0%} apart)")


# ZeRO-1 with pipeline stages: each stage's optimizer state sharded over its dp ranks (plain and interleaved): the tied embedding's
# two copies summed before the reduce-scatter leaves each rank only its shard
for name, dp, pp, extra in [("gpt_2x1x2_zero1", 2, 2, []),
                            ("gpt_2x1x2_v2_zero1", 2, 2, ["--set", "strategy.interleave=2"])]:
    run = train(name, GPT, dp, 1, pp, "1f1b", ["--set", "strategy.zero=1"] + extra)
    compare(name, run, gpt_one, dp, 1, pp)
    check_interleaved_memory(name, run, 1, dp, 2 if "_v2" in name else 1)

# Interleaved 1F1B: 4 blocks in pp·v = 4 chunks of one (rank 0 holds blocks 0 and 2).
V2 = ["--set", "strategy.interleave=2"]
for name, dp, tp, pp in [("gpt_pp2_v2", 1, 1, 2), ("gpt_2x1x2_v2", 2, 1, 2), ("gpt_1x2x2_v2", 1, 2, 2)]:
    run = train(name, GPT, dp, tp, pp, "1f1b", V2)
    compare(name, run, gpt_one, dp, tp, pp)
    check_interleaved_memory(name, run, tp, dp, 2)
# pp 4 needs 8 blocks (pp·v chunks) and micro-batches in groups of 4; pp 2 with v = 4 the same model.
GPT8 = GPT + ["--set", "model={layers: 8, hidden: 64, heads: 4, seq_len: 32, vocab: 256}",
              "--set", "strategy.micro_batches=4"]
gpt8_one = train("gpt8_one", GPT8)
for name, pp, v in [("gpt8_pp4_v2", 4, 2), ("gpt8_pp2_v4", 2, 4)]:
    run = train(name, GPT8, 1, 1, pp, "1f1b", ["--set", f"strategy.interleave={v}"])
    compare(name, run, gpt8_one, 1, 1, pp)
    check_interleaved_memory(name, run, 1, 1, v)
# Activation recomputation keeps less and computes the same: the one-rank loss within REL_TOL on
# one rank and on every kind of grid (the recomputed tp all-reduces are collectives), and less
# activation memory on the first stage than keeping everything (selective drops the attention
# probabilities, full every block's inside).
recompute_memory = {}
for name, dp, tp, pp, mode in [("gpt_one_selective", 1, 1, 1, "selective"), ("gpt_one_full", 1, 1, 1, "full"),
                               ("gpt_1x2x2_selective", 1, 2, 2, "selective"), ("gpt_1x2x2_full", 1, 2, 2, "full"),
                               ("gpt_2x2x1_full", 2, 2, 1, "full"), ("gpt_2x1x2_selective", 2, 1, 2, "selective")]:
    run = train(name, GPT, dp, tp, pp, "1f1b", ["--set", f"strategy.recompute={mode}"])
    compare(name, run, gpt_one, dp, tp, pp)
    recompute_memory[name] = run["memory"]["activations"][0]
recompute_memory["gpt_one_none"] = gpt_one["memory"]["activations"][0]
if not recompute_memory["gpt_one_full"] < recompute_memory["gpt_one_selective"] < recompute_memory["gpt_one_none"]:
    problems.append(f"one-rank tracked activations none/selective/full not decreasing: {recompute_memory}")
if not recompute_memory["gpt_1x2x2_full"] < recompute_memory["gpt_1x2x2_selective"]:
    problems.append(f"tp 2 pp 2: full keeps no less than selective: {recompute_memory}")
print("first-rank tracked activations under recompute: " +
      ", ".join(f"{k} {v}" for k, v in recompute_memory.items()))

# Sequence parallelism (Megatron-SP) with tp: the LayerNorm and residual rows split over the tp
# ranks, all-gathers and reduce-scatters instead of all-reduces, the LayerNorm gradients summed
# over tp once a step: the one-rank loss within REL_TOL, with dp, and with recomputation (whose
# recomputed forward gathers again); every rank's tracked memory is the prediction's, and the
# activations a tp rank holds are fewer than tp without it.
SP = ["--set", "strategy.sequence_parallel=true"]
tp2_activations = train("gpt_tp2_for_sp", GPT, 1, 2, 1)["memory"]["activations"][0]
sp_memory = {}
for name, dp, tp, pp, extra in [
        ("gpt_tp2_sp", 1, 2, 1, []), ("gpt_tp4_sp", 1, 4, 1, []), ("gpt_2x2x1_sp", 2, 2, 1, []),
        ("gpt_tp2_sp_full", 1, 2, 1, ["--set", "strategy.recompute=full"]),
        ("gpt_tp2_sp_selective", 1, 2, 1, ["--set", "strategy.recompute=selective"]),
        # with pipeline stages: each tp rank sends its own rows of the boundary; interleaved too
        ("gpt_1x2x2_sp", 1, 2, 2, []), ("gpt_1x2x2_sp_v2", 1, 2, 2, V2),
        # with ZeRO-1 and ZeRO-2: the LayerNorm gradients summed over tp as backward reports them,
        # before the exchange over dp reduces them (ZeRO-2: every micro-batch's, into a shard)
        ("gpt_2x2x1_sp_zero1", 2, 2, 1, ["--set", "strategy.zero=1"]),
        ("gpt_2x2x1_sp_zero2", 2, 2, 1, ["--set", "strategy.zero=2"]),
        # ZeRO-3: each tp rank's parameters sharded over dp, gathered block by block
        ("gpt_2x2x1_sp_zero3", 2, 2, 1, ["--set", "strategy.zero=3"])]:
    run = train(name, GPT, dp, tp, pp, "1f1b", SP + extra)
    compare(name, run, gpt_one, dp, tp, pp)
    if tp <= 2:  # this machine's site keeps tp inside a node of 2 devices: no prediction for tp 4
        check_interleaved_memory(name, run, tp, dp, 2 if "_v2" in name else 1)
    sp_memory[name] = int(run["memory"]["activations"][0])
print(f"first-rank tracked activations: tp 2 {tp2_activations} B; sequence parallel " +
      ", ".join(f"{k} {v}" for k, v in sp_memory.items()))
if not sp_memory["gpt_tp2_sp"] < tp2_activations:
    problems.append(f"tp 2 with sequence parallelism tracks {sp_memory['gpt_tp2_sp']} B of activations, not fewer "
                    f"than tp 2 without it ({tp2_activations})")

# ZeRO 0 to 3 at dp 2 and 4 (2 micro-batches a rank: ZeRO-2 and 3 reduce each one's gradients
# as backward finishes them; ZeRO-3 gathers each block's parameters before its forward and again
# before its backward): the one-rank loss within REL_TOL, and every rank's model state exactly
# the ZeRO formulas for fp32 gradients and AdamW: params 4N (stages 0-2) or 4 ceil(N/dp) (stage 3,
# the padded shard; the gathered blocks are comm); grads 4N (stages 0, 1) or 4 ceil(N/dp) (2, 3);
# optimizer 8N (stage 0) or 8 times the rank's shard (stages 1-3); and the prediction's bytes per
# category within MEMORY_TOL where the site holds the ranks.
N = int(gpt_one["memory"]["params"][0]) // 4
zero_state = {}
for dp in (2, 4):
    shard = -(-N // dp)
    for zero in (0, 1, 2, 3):
        name = f"gpt_dp{dp}_zero{zero}"
        run = train(name, GPT, dp, 1, 1, "1f1b", ["--set", f"strategy.zero={zero}"])
        compare(name, run, gpt_one, dp, 1, 1)
        for row in run["memory"]:
            mine = min(shard, N - shard * int(row["rank"]))
            want = {"params": 4 * shard if zero == 3 else 4 * N, "grads": 4 * shard if zero >= 2 else 4 * N,
                    "optimizer": 8 * mine if zero >= 1 else 8 * N}
            for part, expected in want.items():
                if int(row[part]) != expected:
                    problems.append(f"{name}: rank {row['rank']} tracks {int(row[part])} B of {part}, the ZeRO "
                                    f"formula says {expected}")
        zero_state[name] = {part: int(run["memory"][part][0]) for part in ("params", "grads", "optimizer", "comm")}
        if dp <= 2:
            check_interleaved_memory(name, run, 1, dp, 1)
print("rank-0 model state (params, grads, optimizer; comm) B per ZeRO stage: " +
      ", ".join(f"{k} {v['params']}/{v['grads']}/{v['optimizer']}; {v['comm']}" for k, v in zero_state.items()))

resnet_one = train("resnet_one", RESNET)
FULL_RESNET = ["--set", "strategy.recompute=full"]
# The ResNet's ZeRO-2 and 3 against plain dp 2 (local BatchNorm statistics per rank: dp 2 is its
# own reference). A ReLU network's trajectory is rounding-stable only until a pre-activation
# within rounding of zero crosses its kink, and SGD at this rate amplifies the crossing: ZeRO-2
# sums each micro-batch's gradients over the ranks before adding the micro-batches (plain dp the
# other way round), which on an AMD EPYC under OpenBLAS's Haswell kernels put 5 steps of plain
# dp and ZeRO-2 3.5e-2 apart in gradient norm. So each comparison runs where the sums are the
# same: with one micro-batch a step, two ranks' sum is one addition, ZeRO-2 and plain dp train
# bit for bit alike; ZeRO-3 reduce-scatters as ZeRO-2 does, so against ZeRO-2 it trains alike
# with its unit gathers, with full recomputation and with synchronised BatchNorm. With 4
# micro-batches, the first step (the same weights on both) holds ZeRO-2 to plain dp's loss and
# gradient norm.
ONE_MICRO = ["--set", "strategy.micro_batches=1"]
resnet_dp2 = train("resnet_dp2", RESNET, 2, 1, 1)
resnet_dp2_zero2 = train("resnet_dp2_zero2", RESNET, 2, 1, 1, "1f1b", ["--set", "strategy.zero=2"])
compare("resnet_dp2_zero2_first_step", resnet_dp2_zero2, resnet_dp2, 2, 1, 1, steps=1)
compare("resnet_dp2_zero2_m1", train("resnet_dp2_zero2_m1", RESNET, 2, 1, 1, "1f1b", ["--set", "strategy.zero=2"] + ONE_MICRO),
        train("resnet_dp2_m1", RESNET, 2, 1, 1, "1f1b", ONE_MICRO), 2, 1, 1)
if not int(resnet_dp2_zero2["memory"]["grads"][0]) * 2 <= int(resnet_dp2["memory"]["grads"][0]) + 8:
    problems.append(f"resnet_dp2_zero2 tracks {int(resnet_dp2_zero2['memory']['grads'][0])} B of grads, not half "
                    f"of plain dp 2's {int(resnet_dp2['memory']['grads'][0])}")
# ZeRO-3: each unit's weights (stem, block, head) gathered before its forward and again before its
# backward, a fully recomputed block's once for both; with synchronised BatchNorm its statistics'
# all-reduces run beside the prefetched gathers (against ZeRO-2 with them).
# Model state exactly the ZeRO formulas: params the padded shard plus the running statistics
# (not sharded, as FSDP's buffers), grads the shard, SGD's momentum the rank's part; as predicted.
N_RESNET = int(resnet_dp2["memory"]["grads"][0]) // 4
statistics_bytes = int(resnet_dp2["memory"]["params"][0]) - 4 * N_RESNET
resnet_shard = -(-N_RESNET // 2)
SYNC = ["--set", "strategy.batchnorm=sync"]
for name, reference, extra in [("resnet_dp2_zero3", resnet_dp2_zero2, []),
                               ("resnet_dp2_zero3_full", resnet_dp2_zero2, ["--set", "strategy.recompute=full"]),
                               ("resnet_dp2_zero3_sync",
                                train("resnet_dp2_zero2_sync", RESNET, 2, 1, 1, "1f1b", ["--set", "strategy.zero=2"] + SYNC),
                                SYNC)]:
    run = train(name, RESNET, 2, 1, 1, "1f1b", ["--set", "strategy.zero=3"] + extra)
    compare(name, run, reference, 2, 1, 1)
    check_interleaved_memory(name, run, 1, 2, 1)
    for row in run["memory"]:
        mine = min(resnet_shard, N_RESNET - resnet_shard * int(row["rank"]))
        for part, expected in [("params", 4 * resnet_shard + statistics_bytes), ("grads", 4 * resnet_shard),
                               ("optimizer", 4 * mine)]:
            if int(row[part]) != expected:
                problems.append(f"{name}: rank {row['rank']} tracks {int(row[part])} B of {part}, the ZeRO-3 "
                                f"formula (SGD with momentum) says {expected}")
resnet_dp2_pp2_zero1 = train("resnet_dp2_pp2_zero1", RESNET, 2, 1, 2, "1f1b", ["--set", "strategy.zero=1"])
compare("resnet_dp2_pp2_zero1", resnet_dp2_pp2_zero1, resnet_dp2, 2, 1, 2)
check_interleaved_memory("resnet_dp2_pp2_zero1", resnet_dp2_pp2_zero1, 1, 2, 1)
for name, pp, schedule in [("resnet_pp2_gpipe", 2, "gpipe"), ("resnet_pp2_1f1b", 2, "1f1b"),
                           ("resnet_pp4_gpipe", 4, "gpipe"), ("resnet_pp4_1f1b", 4, "1f1b")]:
    compare(name, train(name, RESNET, 1, 1, pp, schedule), resnet_one, 1, 1, pp)
# Interleaved 1F1B on resnet-mini's 8 units (stem, 6 blocks, head): pp 2 × 2 chunks (rank 0 holds
# the first and third), pp 4 × 2 chunks of one unit, with full recomputation, and dp 2 × pp 2 ×
# 2 chunks with ZeRO-1. The chunks' boundaries differ in size (each stage of the network has its
# own C·H·W), and in bf16; every rank's tracked memory is the prediction's for its chunks.
for name, dp, pp, reference, extra in [
        ("resnet_pp2_v2", 1, 2, resnet_one, []), ("resnet_pp4_v2", 1, 4, resnet_one, []),
        ("resnet_pp2_v2_full", 1, 2, resnet_one, FULL_RESNET),
        ("resnet_dp2_pp2_v2_zero1", 2, 2, resnet_dp2, ["--set", "strategy.zero=1"]),
        # bf16: the chunks' 16-bit weights rounded from their share of one fp32 master buffer
        ("resnet_pp2_v2_bf16", 1, 2, train("resnet_one_bf16", RESNET, 1, 1, 1, "1f1b", ["--set", "precision=bf16"]),
         ["--set", "precision=bf16"])]:
    run = train(name, RESNET, dp, 1, pp, "1f1b", V2 + extra)
    compare(name, run, reference, dp, 1, pp)
    if pp <= 2:  # this machine's site holds 2 devices: no prediction for 4 ranks
        check_interleaved_memory(name, run, 1, dp, 2)
# The ResNet's full recomputation (each block's forward again before its backward, from its input
# and the batch statistics its forward kept): the same losses as keeping everything, on one rank,
# under dp (against dp 2: local BatchNorm statistics) and on a pipeline; every rank's tracked
# memory is its stage's prediction, and the first stage keeps less than without recomputation.
FULL = ["--set", "strategy.recompute=full"]
resnet_memory = {}
for name, dp, pp, reference in [("resnet_one_full", 1, 1, resnet_one), ("resnet_dp2_full", 2, 1, resnet_dp2),
                                ("resnet_pp2_full", 1, 2, resnet_one)]:
    run = train(name, RESNET, dp, 1, pp, "1f1b", FULL)
    compare(name, run, reference, dp, 1, pp)
    check_interleaved_memory(name, run, 1, dp, 1)
    resnet_memory[name] = int(run["memory"]["activations"][0])
resnet_memory["resnet_one"] = int(resnet_one["memory"]["activations"][0])
print("first-rank tracked activations, resnet-mini: " + ", ".join(f"{k} {v}" for k, v in resnet_memory.items()))
if not resnet_memory["resnet_one_full"] < 0.6 * resnet_memory["resnet_one"]:
    problems.append(f"resnet-mini under recompute full tracks {resnet_memory['resnet_one_full']} B of activations, "
                    f"not under 60% of the {resnet_memory['resnet_one']} B kept without it")

# Activation memory of the first stage with m = 8 micro-batches on p = 2 stages.
eight = ["--set", "strategy.micro_batches=8", "--set", "batch.global=16"]
gpipe = train("gpt_pp2_m8_gpipe", GPT, 1, 1, 2, "gpipe", eight)["memory"]["activations"]
one_f = train("gpt_pp2_m8_1f1b", GPT, 1, 1, 2, "1f1b", eight)["memory"]["activations"]
ratio = gpipe[0] / one_f[0]
print(f"first-stage tracked activations, p=2 m=8: GPipe {gpipe[0]} B, 1F1B {one_f[0]} B (ratio {ratio:.2f}); "
      f"last stage GPipe {gpipe[1]} B, 1F1B {one_f[1]} B")
if not 2.5 < ratio <= 4.0:  # 8 slots against 2, less what every slot count shares
    problems.append(f"GPipe/1F1B first-stage activation ratio {ratio:.2f} for m=8, p=2 is not in (2.5, 4]")
if one_f[1] >= one_f[0]:
    problems.append("1F1B's last stage (1 micro-batch in flight) should hold less than its first (2)")

print("largest relative gap to one rank: " + ", ".join(f"{k} {v:.1e}" for k, v in largest.items()))
if problems:
    sys.exit("FAIL: " + "; ".join(problems))
print("PASS")

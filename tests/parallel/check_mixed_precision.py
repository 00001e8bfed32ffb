#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`scalebench train` in bf16 and fp16: the same training under data and tensor parallelism, loss
scaling's skipped step, and tracked memory. Reads the HDF5 files, never stdout.

1. bf16 and fp16 under dp 2, tp 2 (with and without sequence parallelism), dp 2 x tp 2, pp 2 (1F1B)
   and (bf16) dp 2 x pp 2 (GPipe) give one
   rank's losses and evaluations in the same precision within REL_TOL_16 (16-bit rounding after
   sums in another order), and one rank's 16-bit run stays within REL_TOL_VS_FP32 of fp32. The
   pipeline sends 16-bit activations: its message buffers (tracked comm memory on each stage)
   are half of fp32's pipeline's.
2. An overflow injected at step 3 (SB_INJECT_OVERFLOW) under fp16 dynamic loss scaling: the scale
   of step 4 is half that of step 3, the step is counted in summary.skipped_steps, its gradient
   norm is not finite, and the weights did not change on it: the evaluation after step 3 equals
   the one after step 2 bit for bit, while step 4 trains again. On one rank and on dp 2.
3. bf16 records loss_scale 1 on every step; fp16 the dynamic scale (65536 to start).
4. Tracked activation bytes of a 16-bit run are half of fp32's within 5%.
5. resnet-mini in bf16/fp16: one rank near fp32, dp 2 (synchronised BatchNorm) and pp 2 equal to
   one rank, activations half.
6. The skipped step under pp 2: every stage skips it (the overflow is on one stage only).
7. What is not built yet fails with one clear sentence and writes no result file.
10. ZeRO 1, 2 and 3 in bf16 and fp16 (dp 2): one rank's losses, and the model state per rank of
   the ZeRO formulas exactly (the fp32 master weights sharded with the moments) and as predicted;
   fine-tuning with pruning under bf16 ZeRO-1 as without ZeRO.
9. 16-bit main gradients (precision.main_grads storage): one rank near fp32 main gradients, dp 2
   (also under ZeRO 1 and 2; ZeRO-3, tp 2, interleaved pp 2 and the ResNet's dp 2, ZeRO-2, ZeRO-3 and pp 2
   in bf16) and pp 2 equal to one rank, the model state per rank 2 bytes of
   gradients per parameter exactly and as predicted, 2 bytes a parameter exchanged, and fp16's
   overflow skipping the step.
8. bf16 with activation recomputation (selective on one rank, full under tp 2) gives the losses of
   keeping every activation within REL_TOL_16.

Usage: check_mixed_precision.py SCALEBENCH MPIEXEC OUT_DIR
"""
import os
import subprocess
import sys

import h5py
import numpy as np

scalebench, mpiexec, out_dir = sys.argv[1:4]
REL_TOL_16 = 5e-3
REL_TOL_STORAGE_GPT_GRID = 2e-4
REL_TOL_VS_FP32 = 2e-2
GPT_HIDDEN, GPT_SEQ, MICRO = 64, 32, 4  # batch.global 8 in 2 micro-batches
GPT = ["--set", f"model={{layers: 2, hidden: {GPT_HIDDEN}, heads: 4, seq_len: {GPT_SEQ}, vocab: 256}}", "--set",
       "data=sotu", "--set", "batch.global=8", "--set", "strategy.micro_batches=2", "--set", "eval_batches=2",
       "--set", "threads=1", "--set", "seed=3"]
problems = []


def config_file():
    path = os.path.join(out_dir, "mixed_case.yaml")
    with open(path, "w") as f:
        f.write("model: gpt-nano\ndata: sotu\n")
    return path


# evaluated on the first 512 test images: the comparisons need the same images, not the accuracy of record
RESNET = ["--set", "model=resnet-mini", "--set", "data={dataset: mnist, test_samples: 512}", "--set", "batch.global=32",
          "--set", "eval_batches=1", "--set", "optimizer.type=sgd", "--set", "optimizer.lr=0.05", "--set", "threads=1", "--set", "seed=3"]


def train(name, precision, dp=1, tp=1, steps=5, extra=(), env=None, expect_failure=False, pp=1, model=GPT):
    out = os.path.join(out_dir, f"mixed_{name}.h5")
    if os.path.exists(out):
        os.remove(out)
    grid = ["--set", f"strategy.dp={dp}", "--set", f"strategy.tp={tp}", "--set", f"strategy.pp={pp}"]
    result = subprocess.run([mpiexec, "-np", str(dp * tp * pp), scalebench, "train", "--config", config_file(), "--out",
                             out, *model, "--set", f"precision={precision}", "--set", f"steps={steps}", *grid, *extra],
                            env=dict(os.environ, SB_PROGRESS="lines", **(env or {})), capture_output=True, text=True)
    if expect_failure:
        return result, os.path.exists(out)
    if result.returncode != 0:
        sys.exit(f"FAIL: {name} exited {result.returncode}: {result.stderr[-2000:]}")
    with h5py.File(out, "r") as f:
        run = f["runs"][list(f["runs"])[0]]
        evals = run["eval"][:]
        return {"loss": run["steps"]["loss"][:], "loss_scale": run["steps"]["loss_scale"][:],
                "grad_norm": run["steps"]["grad_norm"][:], "eval": evals["loss"], "eval_step": evals["step"],
                "eval_split": [s.decode() if isinstance(s, bytes) else s for s in evals["split"]],
                "skipped": run["summary"].attrs["skipped_steps"], "precision": run.attrs["precision"],
                "activations": run["memory"]["activations"][:], "comm_memory": run["memory"]["comm"][:],
                "state": {part: run["memory"][part][:] for part in ("params", "grads", "optimizer")},
                "predicted": {part: float(np.atleast_1d(run["prediction"].attrs[f"stage_memory_{part}"])[0])
                              for part in ("params", "grads", "optimizer", "activations")},
                "dp_bytes": run["summary"].attrs["dp_exchange_bytes"],
                "parameters": int(run["summary"].attrs["parameters"])}


def relative_gap(a, b):
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-12)))


gaps = {}
pipelines = {}
fp32_one = train("fp32_one", "fp32")
pipelines["fp32"] = train("fp32_pp2", "fp32", pp=2)
ones = {}  # one rank's run of each 16-bit precision (fp32 main gradients)
for precision in ["bf16", "fp16"]:
    ones[precision] = one = train(f"{precision}_one", precision)
    if str(one["precision"]) not in (precision, precision.encode()):
        problems.append(f"{precision}: run attribute precision is {one['precision']}")
    gaps[f"{precision} vs fp32"] = gap = relative_gap(one["loss"], fp32_one["loss"])
    if gap > REL_TOL_VS_FP32:
        problems.append(f"{precision} one rank: loss differs from fp32 by {gap:.2e} (> {REL_TOL_VS_FP32})")
    for name, dp, tp, pp, schedule in [("dp2", 2, 1, 1, "1f1b"), ("tp2", 1, 2, 1, "1f1b"), ("dp2tp2", 2, 2, 1, "1f1b"),
                                       ("pp2", 1, 1, 2, "1f1b"), ("dp2pp2", 2, 1, 2, "gpipe")]:
        if name == "dp2pp2" and precision == "fp16":
            continue  # four oversubscribed ranks; bf16's run covers the same code (CI time)
        run = train(f"{precision}_{name}", precision, dp, tp, pp=pp, extra=["--set", f"strategy.schedule={schedule}"])
        if name == "pp2":
            pipelines[precision] = run
        gaps[f"{precision} {name}"] = gap = max(relative_gap(run["loss"], one["loss"]),
                                                relative_gap(run["eval"], one["eval"]))
        if gap > REL_TOL_16:
            problems.append(f"{precision} {name}: loss or eval differs from one rank by {gap:.2e} (> {REL_TOL_16})")
    # ZeRO 1, 2 and 3 in 16 bits: each rank keeps only its shard of the fp32 master weights,
    # rounds it after each update and all-gathers the 16-bit shards (ZeRO-3: each unit as it is
    # read); model state per rank the ZeRO formulas' 2, 4 and 12 bytes per parameter, each over dp
    # from its stage on (fp32 main gradients; the master weights with the optimizer), as predicted
    n = int(one["state"]["params"][0]) // 2  # one rank's 2N bytes of 16-bit weights
    shard = -(-n // 2)  # ceil(N / dp), the padded shard; the optimizer's moments cover the rank's own part
    for zero in (1, 2, 3):
        name = f"{precision} dp2 zero{zero}"
        run = train(f"{precision}_dp2_zero{zero}", precision, 2, extra=["--set", f"strategy.zero={zero}"])
        gaps[name] = gap = max(relative_gap(run["loss"], one["loss"]), relative_gap(run["eval"], one["eval"]))
        if gap > REL_TOL_16:
            problems.append(f"{name}: loss or eval differs from one rank by {gap:.2e} (> {REL_TOL_16})")
        for rank in range(2):
            mine = min(shard, n - shard * rank)
            want = {"params": 2 * (shard if zero == 3 else n), "grads": 4 * (shard if zero >= 2 else n),
                    "optimizer": 4 * shard + 8 * mine}
            for part, expected in want.items():
                if int(run["state"][part][rank]) != expected:
                    problems.append(f"{name}: rank {rank} tracks {int(run['state'][part][rank])} B of "
                                    f"{part}, the ZeRO-{zero} formula says {expected}")
        for part in ("params", "grads", "optimizer"):
            measured, predicted = float(run["state"][part][0]), run["predicted"][part]
            if abs(predicted - measured) > 0.05 * measured:
                problems.append(f"{name}: rank 0 tracks {measured:.0f} B of {part}, the prediction says "
                                f"{predicted:.0f}")
        print(f"{name}: model state per rank (params/grads/optimizer) "
              f"{[int(run['state'][p][0]) for p in ('params', 'grads', 'optimizer')]} B, predicted "
              f"{[round(run['predicted'][p]) for p in ('params', 'grads', 'optimizer')]}")
    # sequence parallelism in 16 bits: the reduce-scatters sum in fp32 as the all-reduces do
    run = train(f"{precision}_tp2_sp", precision, 1, 2, extra=["--set", "strategy.sequence_parallel=true"])
    gaps[f"{precision} tp2 sequence parallel"] = gap = max(relative_gap(run["loss"], one["loss"]),
                                                           relative_gap(run["eval"], one["eval"]))
    if gap > REL_TOL_16:
        problems.append(f"{precision} tp2 sequence parallel: loss or eval differs from one rank by {gap:.2e} "
                        f"(> {REL_TOL_16})")
    if precision == "bf16":  # recomputation in 16 bits: the same kernels on the same 16-bit inputs
        for name, tp, mode in [("selective", 1, "selective"), ("full_tp2", 2, "full")]:
            run = train(f"bf16_recompute_{name}", precision, 1, tp, extra=["--set", f"strategy.recompute={mode}"])
            gaps[f"bf16 recompute {name}"] = gap = max(relative_gap(run["loss"], one["loss"]),
                                                       relative_gap(run["eval"], one["eval"]))
            if gap > REL_TOL_16:
                problems.append(f"bf16 recompute {name}: loss or eval differs from keeping every activation by "
                                f"{gap:.2e} (> {REL_TOL_16})")
    expected_scale = 65536.0 if precision == "fp16" else 1.0
    if not (one["loss_scale"] == expected_scale).all():
        problems.append(f"{precision}: loss_scale {one['loss_scale']} (expected {expected_scale} on every step)")
    # stage 0 holds the gradient receives (a fixed depth); the last stage's gradient sends come
    # from a pool that grows while every buffer is in flight, so it holds a whole number of messages
    comm = pipelines[precision]["comm_memory"]
    message = MICRO * GPT_SEQ * GPT_HIDDEN * 2
    print(f"{precision} pp2: pipeline message buffers {comm.tolist()} B per stage, stage 0 "
          f"{comm[0] / pipelines['fp32']['comm_memory'][0]:.4f} of fp32's")
    if comm[0] * 2 != pipelines["fp32"]["comm_memory"][0] or (comm % message).any():
        problems.append(f"{precision} pp2: pipeline message buffers {comm.tolist()} B (fp32 "
                        f"{pipelines['fp32']['comm_memory'].tolist()}), not whole {message}-byte 16-bit messages")
    ratio = one["activations"][0] / fp32_one["activations"][0]
    print(f"{precision}: tracked activations {one['activations'][0]} B, {ratio:.4f} of fp32's")
    if not 0.5 <= ratio <= 0.525:
        problems.append(f"{precision}: tracked activations are {ratio:.4f} of fp32's, not half within 5%")

# resnet-mini: 16-bit against fp32 on one rank, and dp 2 with synchronised BatchNorm (the one-rank
# batch statistics) against one rank in the same precision
resnet_fp32 = train("resnet_fp32_one", "fp32", model=RESNET)
for precision in ["bf16", "fp16"]:
    one = train(f"resnet_{precision}_one", precision, model=RESNET)
    gaps[f"resnet {precision} vs fp32"] = gap = relative_gap(one["loss"], resnet_fp32["loss"])
    if gap > REL_TOL_VS_FP32:
        problems.append(f"resnet {precision} one rank: loss differs from fp32 by {gap:.2e} (> {REL_TOL_VS_FP32})")
    dp2 = train(f"resnet_{precision}_dp2", precision, 2, model=RESNET, extra=["--set", "strategy.batchnorm=sync"])
    gaps[f"resnet {precision} dp2"] = gap = max(relative_gap(dp2["loss"], one["loss"]),
                                               relative_gap(dp2["eval"], one["eval"]))
    if gap > REL_TOL_16:
        problems.append(f"resnet {precision} dp2: loss or eval differs from one rank by {gap:.2e} (> {REL_TOL_16})")
    # one micro-batch: BatchNorm's statistics over the same 32 images as one rank's
    pp2 = train(f"resnet_{precision}_pp2", precision, pp=2, model=RESNET)
    gaps[f"resnet {precision} pp2"] = gap = max(relative_gap(pp2["loss"], one["loss"]),
                                               relative_gap(pp2["eval"], one["eval"]))
    if gap > REL_TOL_16:
        problems.append(f"resnet {precision} pp2: loss or eval differs from one rank by {gap:.2e} (> {REL_TOL_16})")
    ratio = one["activations"][0] / resnet_fp32["activations"][0]
    print(f"resnet {precision}: tracked activations {one['activations'][0]} B, {ratio:.4f} of fp32's")
    if not 0.5 <= ratio <= 0.525:
        problems.append(f"resnet {precision}: tracked activations are {ratio:.4f} of fp32's, not half within 5%")

# 16-bit main gradients (precision.main_grads storage): backward's fp32 ranges added into bf16/fp16
# main gradients micro-batch by micro-batch and all-reduced in 16 bits. One rank near the fp32
# main gradients' run of the same precision; dp 2 (and tp 2, dp 2 of the ResNet, in bf16) equal to
# one rank with 16-bit main gradients; every rank's grads exactly 2 bytes a parameter, the rest of
# the model state as before, all four categories as predicted; the exchange moves 2 bytes a
# parameter; an overflow of the 16-bit sums under fp16 loss scaling skips the step. fp16 main
# gradients hold the loss scale's factor in fp16's range (65504): their runs scale by 1024, where
# 65536 (the dynamic scaler's start) overflows the first steps' sums of this model.
MEMORY_TOL = 0.05
for precision in ["bf16", "fp16"]:
    storage = f"{{dtype: {precision}, main_grads: storage{', loss_scale: 1024' if precision == 'fp16' else ''}}}"
    fp32_grads = ones[precision]
    one = train(f"{precision}_one_storage", storage)
    gaps[f"{precision} 16-bit main gradients vs fp32 ones"] = gap = relative_gap(one["loss"], fp32_grads["loss"])
    if gap > REL_TOL_16:
        problems.append(f"{precision} main_grads storage, one rank: loss differs from fp32 main gradients by "
                        f"{gap:.2e} (> {REL_TOL_16})")
    n = int(fp32_grads["state"]["params"][0]) // 2
    # pp 2: each stage accumulates its own main gradients (the GPT's two micro-batches; the
    # ResNet's one, whose BatchNorm statistics are one rank's); the GPT's first and last stage
    # sum their 16-bit copies of the tied embedding's
    # ZeRO-1: the sums reduce-scattered in 16 bits, each rank's optimizer (fp32 master weights and
    # moments) on its shard only
    # ZeRO-2 and 3: each micro-batch's ranges rounded into 16-bit buckets, all-reduced in 16 bits and
    # added into a 16-bit gradient shard
    cases = [("dp2", 2, 1, 1, GPT), ("tp2", 1, 2, 1, GPT), ("pp2", 1, 1, 2, GPT), ("dp2_zero1", 2, 1, 1, GPT),
             ("dp2_zero2", 2, 1, 1, GPT), ("dp2_zero3", 2, 1, 1, GPT), ("resnet_dp2", 2, 1, 1, RESNET),
             ("resnet_dp2_zero2", 2, 1, 1, RESNET), ("resnet_dp2_zero3", 2, 1, 1, RESNET),
             ("resnet_pp2", 1, 1, 2, RESNET)] if precision == "bf16" else \
        [("dp2", 2, 1, 1, GPT), ("pp2", 1, 1, 2, GPT), ("dp2_zero1", 2, 1, 1, GPT), ("dp2_zero2", 2, 1, 1, GPT)]
    resnet_one = None
    for name, dp, tp, pp, model in cases:
        zero = int(name[-1]) if "_zero" in name else 0
        if model is RESNET and resnet_one is None:
            resnet_one = train(f"resnet_{precision}_one_storage", storage, model=RESNET)
        reference = one if model is GPT else resnet_one
        extra = ["--set", "strategy.batchnorm=sync"] if model is RESNET and dp > 1 else []
        extra += ["--set", f"strategy.zero={zero}"]
        run = train(f"{precision}_{name}_storage", storage, dp, tp, model=model, extra=extra, pp=pp)
        gaps[f"{precision} {name} main_grads storage"] = gap = max(relative_gap(run["loss"], reference["loss"]),
                                                                   relative_gap(run["eval"], reference["eval"]))
        # the GPT's grids differ from one rank only in the order of their sums (measured: at most
        # 3.0e-5); pp 2 without the tied embedding's sum is 5e-4 off
        tolerance = REL_TOL_STORAGE_GPT_GRID if model is GPT else REL_TOL_16
        if gap > tolerance:
            problems.append(f"{precision} {name} main_grads storage: loss or eval differs from one rank by {gap:.2e} "
                            f"(> {tolerance})")
        # each rank's parameters: its tp shard's 16-bit weights (the ResNet's params also hold the
        # BatchNorm running statistics; it has no tp; ZeRO-3's hold a shard: one rank's count); a
        # ResNet pipeline stage's from its fp32 master weights and SGD momentum, 8 bytes each (the
        # run's `parameters` is the whole network's; the optimizer is then held to the prediction)
        if model is GPT:
            params = [int(p) // 2 for p in (run if zero < 3 else reference)["state"]["params"]]
        elif pp > 1:
            params = [int(o) // 8 for o in run["state"]["optimizer"]]
        else:
            params = [run["parameters"]] * dp
        params = params * dp if len(params) < dp else params
        shard = -(-params[0] // dp)  # ZeRO's shard: ceil(parameters / dp)
        for rank, parameters in enumerate(params):
            moments = 8 if model is GPT else 4  # AdamW's m and v, SGD's momentum
            owned = max(0, min(shard, parameters - shard * rank)) if zero else parameters
            # ZeRO shards the moments and the fp32 master weights (its padded shard), from stage 2
            # the 16-bit gradients (the padded shard), at stage 3 the 16-bit weights
            optimizer = (4 * shard if zero else 4 * parameters) + moments * owned
            want = [("grads", 2 * (shard if zero >= 2 else parameters)), ("optimizer", optimizer)]
            if model is GPT and zero == 3:
                want.append(("params", 2 * shard))
            elif zero == 3:  # the ResNet's BatchNorm running statistics (fp32) are not sharded
                want.append(("params", int(resnet_one["state"]["params"][0]) - 2 * parameters + 2 * shard))
            for part, expected in want:
                if int(run["state"][part][rank]) != expected:
                    problems.append(f"{precision} {name} main_grads storage: rank {rank} tracks "
                                    f"{int(run['state'][part][rank])} B of {part}, 16-bit main gradients and fp32 "
                                    f"master weights with AdamW/SGD say {expected}")
        for part, predicted in run["predicted"].items():
            measured = float(run["state"][part][0]) if part != "activations" else float(run["activations"][0])
            if zero and part == "optimizer":  # ZeRO's (4 + K)/dp bytes a parameter
                formula = (4 + (8 if model is GPT else 4)) * shard
                print(f"{precision} {name} main_grads storage: optimizer state tracked {measured:.0f} B, the ZeRO "
                      f"formula {formula} B, the prediction {predicted:.0f} B")
                if predicted != formula or measured != formula:
                    problems.append(f"{precision} {name} main_grads storage: rank 0 tracks {measured:.0f} B and the "
                                    f"prediction says {predicted:.0f} B of optimizer state; ZeRO-{zero}'s formula says "
                                    f"{formula}")
                continue
            if abs(predicted - measured) > MEMORY_TOL * measured:
                problems.append(f"{precision} {name} main_grads storage: rank 0 tracks {measured:.0f} B of {part}, "
                                f"the prediction says {predicted:.0f}")
        # ZeRO-2 reduces each of the rank's micro-batches (the GPT's two; the ResNet's one); ZeRO-3's
        # figure adds the parameter gathers
        reductions = 2 if zero == 2 and model is GPT else 1
        if dp > 1 and zero < 3 and int(run["dp_bytes"]) != 2 * reductions * (dp * shard if zero == 1 else params[0]):
            problems.append(f"{precision} {name} main_grads storage: the exchange moved {run['dp_bytes']} B a step, "
                            f"not 2 bytes for each of {params[0]} parameters")
# interleaved 1F1B with 16-bit main gradients: each model chunk's ranges reach the 16-bit buckets at
# their own last micro-batch, whatever order the chunks run in; pp 2 × 2 chunks of a 4-block GPT
# equal to one rank, grads 2 bytes a parameter, as predicted
storage = "{dtype: bf16, main_grads: storage}"
four = ["--set", f"model={{layers: 4, hidden: {GPT_HIDDEN}, heads: 4, seq_len: {GPT_SEQ}, vocab: 256}}"]
one = train("bf16_four_blocks_one_storage", storage, extra=four)
run = train("bf16_pp2_interleave2_storage", storage, pp=2, extra=four + ["--set", "strategy.interleave=2"])
gaps["bf16 pp2 interleave2 main_grads storage"] = gap = max(relative_gap(run["loss"], one["loss"]),
                                                            relative_gap(run["eval"], one["eval"]))
if gap > REL_TOL_STORAGE_GPT_GRID:
    problems.append(f"bf16 pp2 interleave2 main_grads storage: loss or eval differs from one rank by {gap:.2e} "
                    f"(> {REL_TOL_STORAGE_GPT_GRID})")
for rank in range(2):
    if int(run["state"]["grads"][rank]) != int(run["state"]["params"][rank]):  # 2 bytes each, as the weights
        problems.append(f"bf16 pp2 interleave2 main_grads storage: rank {rank} tracks {int(run['state']['grads'][rank])} "
                        f"B of grads for {int(run['state']['params'][rank]) // 2} parameters")
if abs(run["predicted"]["grads"] - float(run["state"]["grads"][0])) > MEMORY_TOL * float(run["state"]["grads"][0]):
    problems.append(f"bf16 pp2 interleave2 main_grads storage: rank 0 tracks {int(run['state']['grads'][0])} B of "
                    f"grads, the prediction says {run['predicted']['grads']:.0f}")

# dynamic scaling from 65536 (the first steps may overflow on their own) and step 3 made inf (under
# ZeRO-2: the 16-bit gradient shard)
for zero in (0, 2):
    name = f"overflow_dp2_zero{zero}_storage"
    run = train(name, "{dtype: fp16, main_grads: storage}", 2, steps=4,
                extra=["--set", "eval_every=1", "--set", f"strategy.zero={zero}"], env={"SB_INJECT_OVERFLOW": "3"})
    heldout = {int(s): l for s, l, split in zip(run["eval_step"], run["eval"], run["eval_split"]) if split == "heldout"}
    scale = run["loss_scale"]
    if (np.isfinite(run["grad_norm"][2]) or scale[3] != scale[2] / 2 or heldout[3] != heldout[2]
            or not np.isfinite(run["grad_norm"][3]) or heldout[4] == heldout[3]):
        problems.append(f"{name}: skipped_steps {run['skipped']}, grad_norm {run['grad_norm']}, "
                        f"loss_scale {scale}, held-out loss after steps 2/3/4 {heldout[2]} {heldout[3]} {heldout[4]}")
    print(f"{name}: loss_scale {scale.tolist()}, grad_norm {run['grad_norm'].tolist()}, "
          f"skipped_steps {run['skipped']}")

# the skipped step: evaluations after every step
# (overflow_pp2: on the last stage only; every stage must skip)
for name, dp, pp, inject in [("overflow_one", 1, 1, "3"), ("overflow_dp2", 2, 1, "3"), ("overflow_pp2", 1, 2, "3:1")]:
    run = train(name, "fp16", dp, pp=pp, steps=4, extra=["--set", "eval_every=1"], env={"SB_INJECT_OVERFLOW": inject})
    scale = run["loss_scale"]
    if not (scale[0] == scale[1] == scale[2] and scale[3] == scale[2] / 2):
        problems.append(f"{name}: loss_scale per step {scale} (step 4 should be half of step 3)")
    if run["skipped"] != 1 or np.isfinite(run["grad_norm"][2]) or not np.isfinite(run["grad_norm"][[0, 1, 3]]).all():
        problems.append(f"{name}: skipped_steps {run['skipped']}, grad_norm {run['grad_norm']}")
    heldout = {int(s): l for s, l, split in zip(run["eval_step"], run["eval"], run["eval_split"]) if split == "heldout"}
    if heldout[3] != heldout[2]:
        problems.append(f"{name}: weights changed on the skipped step: eval {heldout[2]!r} then {heldout[3]!r}")
    if heldout[4] == heldout[3]:
        problems.append(f"{name}: training did not continue after the skipped step (eval {heldout[4]!r} again)")
    print(f"{name}: loss_scale {scale.tolist()}, held-out loss after steps 2/3/4: "
          f"{heldout[2]:.6f} {heldout[3]:.6f} {heldout[4]:.6f}")

# fine-tuning with pruning under bf16 ZeRO-1: finetune.from's weights go into each rank's fp32
# master shard, the masks act on the shard after each update, and the sparsity is measured on the
# master gathered whole after training; the same losses, sparsity and pruned count as without
# ZeRO, with the master weights sharded
base = os.path.join(out_dir, "mixed_finetune_base.ckpt.h5")
train("finetune_base", "fp32", extra=["--set", "checkpoint.every=5", "--set", f"checkpoint.path={base}"])
pruned = {}
for zero in (0, 1):
    pruned[zero] = train(f"bf16_dp2_zero{zero}_finetune_prune", "bf16", 2,
                         extra=["--set", f"strategy.zero={zero}", "--set", f"finetune.from={base}",
                                "--set", "prune.sparsity=0.5"])
    with h5py.File(os.path.join(out_dir, f"mixed_bf16_dp2_zero{zero}_finetune_prune.h5"), "r") as f:
        summary = f["runs"][list(f["runs"])[0]]["summary"].attrs
        pruned[zero]["sparsity"], pruned[zero]["pruned"] = float(summary["sparsity"]), int(summary["pruned_weights"])
gaps["bf16 dp2 zero1 finetune prune"] = gap = relative_gap(pruned[1]["loss"], pruned[0]["loss"])
if gap > REL_TOL_STORAGE_GPT_GRID or pruned[0]["sparsity"] != 0.5 or pruned[1]["sparsity"] != 0.5 or \
        pruned[1]["pruned"] != pruned[0]["pruned"]:
    problems.append(f"bf16 dp2 zero1 finetune prune: loss gap {gap:.2e} to zero 0, sparsity {pruned[1]['sparsity']} "
                    f"(zero 0: {pruned[0]['sparsity']}), pruned {pruned[1]['pruned']} ({pruned[0]['pruned']})")
n = int(pruned[1]["state"]["params"][0]) // 2
if int(pruned[1]["state"]["optimizer"][0]) != 12 * -(-n // 2):
    problems.append(f"bf16 dp2 zero1 finetune prune: rank 0 tracks {int(pruned[1]['state']['optimizer'][0])} B of "
                    f"optimizer state, ZeRO-1's formula says {12 * -(-n // 2)}")

# wrong: one sentence, no file (bf16 on device cuda trains where a GPU is: tests/cuda/test_cuda_train.cpp;
# without one, tests/cli/test_bad_input.cpp holds the refusal)
for name, precision, pp, extra, message in [
        ("bad_scale", "{dtype: fp16, loss_scale: lots}", 1, [],
         "'precision.loss_scale' must be dynamic, none or a positive number, got 'lots'")]:
    result, wrote = train(f"refused_{name}", precision, pp=pp, extra=extra, expect_failure=True)
    if result.returncode == 0 or message not in result.stderr or wrote:
        problems.append(f"refused {name}: exit {result.returncode}, file written {wrote}, stderr {result.stderr[-300:]!r}")

print("largest relative gaps: " + ", ".join(f"{k} {v:.1e}" for k, v in gaps.items()))
if problems:
    sys.exit("FAIL: " + "; ".join(problems))
print("PASS")

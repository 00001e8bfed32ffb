#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# The PyTorch eager peer of bench_train: the identical GPT (models/gpt/make_golden.py) or
# resnet-mini (models/resnet/make_golden.py), batch, optimizer and clipping, timed per step;
# or (GPT) trained and evaluated on SOTU.
# Leaves out torch.compile (not in Debian's torch 1.13) and data loading cost.
"""Usage (threads must be fixed before torch is imported, so they are an argument):
  /usr/bin/python3 bench/pytorch_peer.py time --model gpt-tiny --batch 16 --threads 2 --steps 20
  /usr/bin/python3 bench/pytorch_peer.py time --model gpt-tiny --precision bf16 --threads 2
  /usr/bin/python3 bench/pytorch_peer.py train --model gpt-tiny --batch 16 --threads 2 --steps 300
Prints one JSON line."""
import argparse
import json
import os
import pathlib
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
CONFIGS = {
    "gpt-nano": dict(name="gpt-nano", layers=2, channels=64, heads=4, max_seq_len=64, vocab=256),
    "gpt-tiny": dict(name="gpt-tiny", layers=4, channels=256, heads=8, max_seq_len=128, vocab=256),
    "gpt-small": dict(name="gpt-small", layers=6, channels=384, heads=6, max_seq_len=256, vocab=256),
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["time", "train"])
    parser.add_argument("--model", default="gpt-tiny", choices=sorted(CONFIGS) + ["resnet-mini"])
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--eval-batches", type=int, default=32)
    # bf16: forward and loss under torch.autocast (bf16 matmuls through oneDNN, fp32 weights)
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    args = parser.parse_args()
    os.environ["OPENBLAS_NUM_THREADS"] = str(args.threads)
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    import numpy as np
    import torch
    sys.path.insert(0, str(REPO / "models" / "gpt"))
    from make_golden import GPT  # the same model definition as the golden file

    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    if args.model == "resnet-mini":
        print(json.dumps(time_resnet(args, np, torch)))
        return
    cfg = CONFIGS[args.model]
    B, T = args.batch, cfg["max_seq_len"]
    files = sorted((REPO / "data" / "sotu").glob("*.txt"))
    text = np.frombuffer(b"\n".join(f.read_bytes() for f in files), dtype=np.uint8)
    split = int(len(text) * 0.9)
    train, heldout = text[:split], text[split:]
    rng = np.random.default_rng(1)

    def batch(source, starts):
        idx = starts[:, None] + np.arange(T + 1)[None, :]
        chunk = torch.from_numpy(source[idx].astype(np.int64))
        return chunk[:, :-1].contiguous(), chunk[:, 1:].contiguous()

    model = GPT(cfg)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                                   {"params": no_decay, "weight_decay": 0.0}],
                                  lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    times = []
    for step in range(args.steps):
        tokens, targets = batch(train, rng.integers(0, len(train) - T - 1, size=B))
        t0 = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.precision == "bf16"):
            _, loss = model(tokens, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        times.append(time.perf_counter() - t0)
    result = dict(model=args.model, batch=B, seq_len=T, threads=args.threads, precision=args.precision,
                  torch=str(torch.__version__), steps=args.steps, final_train_loss=loss.item())
    steady = sorted(times[min(3, len(times) - 1):])
    result["step_time_median_s"] = steady[len(steady) // 2]
    if args.mode == "train":
        # The same evaluation as the trainer: evenly spaced held-out windows.
        n = args.eval_batches * B
        starts = (np.arange(n) * (len(heldout) - T - 1)) // max(n - 1, 1)
        with torch.no_grad():
            losses = [model(*batch(heldout, starts[i * B:(i + 1) * B]))[1].item() for i in range(args.eval_batches)]
        result["heldout_loss"] = float(np.mean(losses))
    print(json.dumps(result))


def time_resnet(args, np, torch):
    """resnet-mini training steps (forward, backward, SGD) on real MNIST batches."""
    import importlib.util
    import torch.nn.functional as F
    # Both models' scripts are called make_golden.py: load this one under its own name.
    spec = importlib.util.spec_from_file_location("resnet_golden", REPO / "models" / "resnet" / "make_golden.py")
    resnet_golden = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(resnet_golden)
    CONFIG, ResnetMini = resnet_golden.CONFIG, resnet_golden.ResnetMini
    raw = (REPO / "data" / "mnist" / "train-images-idx3-ubyte").read_bytes()
    images = (np.frombuffer(raw, dtype=np.uint8, offset=16).reshape(-1, 1, 28, 28) / 255.0 - 0.1307) / 0.3081
    labels = np.frombuffer((REPO / "data" / "mnist" / "train-labels-idx1-ubyte").read_bytes(), dtype=np.uint8,
                           offset=8)
    model = ResnetMini(CONFIG)
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    rng = np.random.default_rng(1)
    times = []
    for _ in range(args.steps):
        index = rng.integers(0, len(labels), size=args.batch)
        x = torch.from_numpy(images[index].astype(np.float32))
        y = torch.from_numpy(labels[index].astype(np.int64))
        t0 = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.precision == "bf16"):
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        times.append(time.perf_counter() - t0)
    steady = sorted(times[min(3, len(times) - 1):])
    return dict(model=args.model, batch=args.batch, threads=args.threads, precision=args.precision,
                torch=str(torch.__version__),
                steps=args.steps, step_time_median_s=steady[len(steady) // 2])


if __name__ == "__main__":
    main()

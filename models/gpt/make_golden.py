#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# Writes models/gpt/gpt_nano_golden.h5: a PyTorch GPT-nano, one batch of real text, its
# logits, loss, every gradient and 10 AdamW steps. Leaves out bf16/fp16 and multi-rank runs.
"""Golden file for the C++ GPT (tests/models/test_gpt_golden.cpp).

Run from anywhere with Debian's Python (the pyenv `python3` has no torch):
    /usr/bin/python3 models/gpt/make_golden.py
The model mirrors models/gpt/gpt.cpp: byte vocabulary, learned token and position
embeddings, pre-LayerNorm blocks with fused QKV and manual causal softmax attention,
tanh-GELU MLP, final LayerNorm, head tied to the token embedding. Parameters are written
in the C++ layout: per-layer tensors stacked to (L, ...), nn.Linear weights as (OC, C).
"""
import argparse
import math
import pathlib

import h5py
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

REPO = pathlib.Path(__file__).resolve().parents[2]
CONFIG = dict(name="gpt-nano", layers=2, channels=64, heads=4, max_seq_len=64, vocab=256)
BATCH, SEQ = 4, 64
SEED = 1234
TEXT_OFFSET = 1000  # bytes into the first speech: past the salutation, plain prose
ADAMW = dict(lr=1e-3, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
GRAD_CLIP = 1.0
STEPS = 10


class Block(nn.Module):
    def __init__(self, C, NH):
        super().__init__()
        self.heads = NH
        self.ln1 = nn.LayerNorm(C)
        self.qkv = nn.Linear(C, 3 * C)      # weight (3C, C), rows [q | k | v]
        self.attproj = nn.Linear(C, C)
        self.ln2 = nn.LayerNorm(C)
        self.fc = nn.Linear(C, 4 * C)
        self.fcproj = nn.Linear(4 * C, C)

    def attention(self, x):
        B, T, C = x.shape
        hs = C // self.heads
        q, k, v = self.qkv(x).split(C, dim=2)                  # (B, T, C) each
        q, k, v = (t.view(B, T, self.heads, hs).transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))  # (B, NH, T, T)
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        att = F.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.attproj(y)

    def forward(self, x):
        x = x + self.attention(self.ln1(x))
        return x + self.fcproj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        C = cfg["channels"]
        self.wte = nn.Embedding(cfg["vocab"], C)
        self.wpe = nn.Embedding(cfg["max_seq_len"], C)
        self.blocks = nn.ModuleList(Block(C, cfg["heads"]) for _ in range(cfg["layers"]))
        self.lnf = nn.LayerNorm(C)
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif p.dim() == 1:   # LayerNorm weight
                nn.init.ones_(p)
            else:                # matrices and embeddings
                nn.init.normal_(p, mean=0.0, std=0.02)

    def forward(self, tokens, targets):
        B, T = tokens.shape
        x = self.wte(tokens) + self.wpe(torch.arange(T))
        for block in self.blocks:
            x = block(x)
        logits = self.lnf(x) @ self.wte.weight.t()  # tied head, no bias
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss


def our_layout(model, grads=False):
    """{name: array} in the C++ names and layout (per-layer tensors stacked to (L, ...))."""
    def get(p):
        return (p.grad if grads else p).detach().numpy().astype(np.float32)

    def stacked(pick):
        return np.stack([get(pick(b)) for b in model.blocks])

    return {
        "wte": get(model.wte.weight),
        "wpe": get(model.wpe.weight),
        "ln1w": stacked(lambda b: b.ln1.weight),
        "ln1b": stacked(lambda b: b.ln1.bias),
        "qkvw": stacked(lambda b: b.qkv.weight),
        "qkvb": stacked(lambda b: b.qkv.bias),
        "attprojw": stacked(lambda b: b.attproj.weight),
        "attprojb": stacked(lambda b: b.attproj.bias),
        "ln2w": stacked(lambda b: b.ln2.weight),
        "ln2b": stacked(lambda b: b.ln2.bias),
        "fcw": stacked(lambda b: b.fc.weight),
        "fcb": stacked(lambda b: b.fc.bias),
        "fcprojw": stacked(lambda b: b.fcproj.weight),
        "fcprojb": stacked(lambda b: b.fcproj.bias),
        "lnfw": get(model.lnf.weight),
        "lnfb": get(model.lnf.bias),
    }


def text_batch():
    speech = sorted((REPO / "data" / "sotu").glob("*.txt"))[0]
    data = np.frombuffer(speech.read_bytes(), dtype=np.uint8)
    chunk = data[TEXT_OFFSET:TEXT_OFFSET + BATCH * SEQ + 1].astype(np.int64)
    assert chunk.size == BATCH * SEQ + 1, f"{speech} is too short"
    tokens = torch.from_numpy(chunk[:-1].reshape(BATCH, SEQ).copy())
    targets = torch.from_numpy(chunk[1:].reshape(BATCH, SEQ).copy())
    return speech.name, tokens, targets


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(pathlib.Path(__file__).with_name("gpt_nano_golden.h5")))
    args = parser.parse_args()

    torch.manual_seed(SEED)
    torch.set_num_threads(1)  # deterministic reductions
    model = GPT(CONFIG)
    source, tokens, targets = text_batch()
    params = our_layout(model)

    logits, loss = model(tokens, targets)
    loss.backward()
    grads = our_layout(model, grads=True)

    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": ADAMW["weight_decay"]},
         {"params": no_decay, "weight_decay": 0.0}],
        lr=ADAMW["lr"], betas=ADAMW["betas"], eps=ADAMW["eps"])
    losses, grad_norms = [], []
    for _ in range(STEPS):
        optimizer.zero_grad(set_to_none=True)
        _, step_loss = model(tokens, targets)
        step_loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), GRAD_CLIP)
        optimizer.step()
        losses.append(step_loss.item())
        grad_norms.append(norm.item())

    with h5py.File(args.out, "w") as f:
        f.attrs["format_version"] = 1
        f.attrs["torch_version"] = str(torch.__version__)
        f.attrs["seed"] = SEED
        f.attrs["text_source"] = f"data/sotu/{source} bytes [{TEXT_OFFSET}, {TEXT_OFFSET + BATCH * SEQ + 1})"
        for key, value in CONFIG.items():
            f.attrs[f"config_{key}"] = value
        f.attrs["batch"], f.attrs["seq_len"] = BATCH, SEQ
        f.attrs["adamw_lr"], f.attrs["adamw_eps"] = ADAMW["lr"], ADAMW["eps"]
        f.attrs["adamw_beta1"], f.attrs["adamw_beta2"] = ADAMW["betas"]
        f.attrs["adamw_weight_decay"], f.attrs["grad_clip"] = ADAMW["weight_decay"], GRAD_CLIP
        f["tokens"] = tokens.numpy().astype(np.int32)
        f["targets"] = targets.numpy().astype(np.int32)
        f["logits"] = logits.detach().numpy().astype(np.float32)
        f["loss"] = np.float32(loss.item())
        for name, value in params.items():
            f[f"params/{name}"] = value
        for name, value in grads.items():
            f[f"grads/{name}"] = value
        f["losses_10_steps"] = np.array(losses, dtype=np.float32)
        f["grad_norms_10_steps"] = np.array(grad_norms, dtype=np.float32)
    print(f"wrote {args.out}: loss {loss.item():.6f}, 10-step losses {losses[0]:.4f} -> {losses[-1]:.4f}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The peer of bench_cuda_gpt_step: the same GPT-2 (tied head, GELU-tanh, pre-LayerNorm, AdamW
with clipping at 1.0) in PyTorch eager on the same GPU, timed with CUDA events over whole
steps, in the same two settings: fp32 without TF32 (what our cuda back-end runs), and bf16
autocast with PyTorch's fused attention (what a tuned framework reaches). Prints one line per
setting with ms/step, TFLOP/s (the trainer's FLOP count, 3 x forward matrix products) and MFU
against the dense bf16 peak. Leaves out torch.compile and multi-GPU.

    python3 tests/gpu/torch_gpt2_step.py [--batch 8] [--seq-len 1024] [--steps 10]
"""
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

L, C, NH, V, MAXT = 12, 768, 12, 50304, 1024
BF16_DENSE_TFLOPS = 989.5  # H100/H200 SXM datasheet: 1,979 with sparsity


class Block(nn.Module):
    def __init__(self, fused_attention):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.qkv, self.proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.fc, self.fcproj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)
        self.fused = fused_attention

    def forward(self, x):
        B, T, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, NH, C // NH).transpose(1, 2) for t in (q, k, v))
        if self.fused:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) / math.sqrt(C // NH)
            att = att.masked_fill(torch.ones(T, T, device=x.device, dtype=torch.bool).triu(1), float("-inf"))
            y = att.softmax(dim=-1) @ v
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
        return x + self.fcproj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class Gpt(nn.Module):
    def __init__(self, fused_attention):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(MAXT, C)
        self.blocks = nn.ModuleList(Block(fused_attention) for _ in range(L))
        self.lnf = nn.LayerNorm(C)

    def forward(self, tokens, targets):
        x = self.wte(tokens) + self.wpe(torch.arange(tokens.shape[1], device=tokens.device))
        for block in self.blocks:
            x = block(x)
        logits = self.lnf(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.float().view(-1, V), targets.view(-1))


def measure(setting, B, T, steps):
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model = Gpt(fused_attention=setting == "bf16").cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1)
    tokens = torch.randint(0, V, (B, T + 1), device="cuda")
    x, y = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()

    def step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=setting == "bf16"):
            loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        return loss

    for _ in range(2):
        step()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(steps):
        step()
    stop.record()
    torch.cuda.synchronize()
    seconds = start.elapsed_time(stop) * 1e-3 / steps
    flops = 3 * (L * (24 * B * T * C * C + 4 * B * T * T * C) + 2 * B * T * C * V)
    tflops = flops / seconds * 1e-12
    print(f"peer: torch {torch.__version__} gpt2-124m {setting} B={B} T={T}: {seconds * 1e3:.2f} ms/step, "
          f"{B * T / seconds:.0f} tokens/s, {tflops:.1f} TFLOP/s, MFU {100 * tflops / BF16_DENSE_TFLOPS:.1f}% "
          f"of the dense bf16 peak ({BF16_DENSE_TFLOPS})", flush=True)
    del model, optimizer
    torch.cuda.empty_cache()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq-len", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("SKIP: torch_gpt2_step: no CUDA device visible")
        return
    print(f"peer on {torch.cuda.get_device_name(0)}")
    for setting in ("fp32", "bf16"):
        measure(setting, args.batch, args.seq_len, args.steps)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# Writes tests/precision/conversion_golden.h5: float32 bit patterns and what PyTorch
# (.to(torch.bfloat16)) and NumPy (.astype(np.float16)) make of them, the independent reference
# for precision/bf16.hpp and precision/fp16.hpp (tests/precision/test_conversion_golden.cpp).
# Leaves out the 16-bit -> float direction (exact; tested exhaustively in C++) and NaN payloads
# (torch returns one canonical NaN; the C++ test asks only that NaN stays NaN).
"""Run from anywhere with Debian's Python (it has torch, numpy, h5py):
    /usr/bin/python3 tests/precision/make_conversion_golden.py

Datasets (one row per value, same order):
  input   uint32  the float32 bit pattern
  bf16    uint16  torch.tensor(x).to(torch.bfloat16) bits (round to nearest, ties to even)
  fp16    uint16  x.astype(np.float16) bits (round to nearest, ties to even)
  class   uint8   which group a value came from (CLASS_NAMES, an attribute)
Structured groups (special values, every rounding boundary of both formats, sweeps around the
fp16 and bf16 overflow and underflow thresholds) come first; uniformly random bit patterns fill
the rest. The structured rows compress well (gzip + shuffle); the random ones do not, so their
count sets the file size.
"""
import pathlib

import h5py
import numpy as np
import torch

OUT = pathlib.Path(__file__).resolve().parent / "conversion_golden.h5"
SEED = 20261129
RANDOM_COUNT = 450_000
FORMAT_VERSION = 1
CLASS_NAMES = ["special", "bf16_boundaries", "fp16_boundaries", "thresholds", "float_subnormal",
               "random_bits"]


def u32(values):
    return np.asarray(values, dtype=np.uint64).astype(np.uint32)


def with_signs(bits):
    bits = u32(bits)
    return np.concatenate([bits, bits | np.uint32(0x80000000)])


def special():
    values = [
        0x00000000, 0x7F800000,              # +0, +inf
        0x7FC00000, 0x7FC00001, 0x7FFFFFFF,  # quiet NaNs
        0x7F800001, 0x7FA00000, 0x7FBFFFFF, 0x7F800100, 0x7F802000,  # signalling NaNs
        0x7F7FFFFF, 0x00800000, 0x00000001, 0x007FFFFF,  # FLT_MAX, FLT_MIN, subnormal extremes
        0x3F800000, 0x40490FDB,              # 1, pi
    ]
    return with_signs(values)


def bf16_boundaries():
    # Every bf16 value as a float, the halfway point above it, and one ulp on either side of that
    # halfway point: ties to even, just below and just above the tie, for all 65536 patterns.
    upper = np.arange(1 << 16, dtype=np.uint64) << 16
    return u32(np.concatenate([upper, upper | 0x8000, upper | 0x7FFF, upper | 0x8001]))


def fp16_boundaries():
    # Every finite fp16 value as float (exact), and the float halfway between it and the next
    # fp16 value, with its neighbours one float ulp below and above.
    h = np.arange(0, 0x7C00, dtype=np.uint16)
    lo = h.view(np.float16).astype(np.float64)
    hi = (h + 1).view(np.float16).astype(np.float64)  # 0x7C00 (inf) for the last: use 65536
    hi[-1] = 65536.0
    exact = lo.astype(np.float32).view(np.uint32)
    mid = ((lo + hi) / 2).astype(np.float32).view(np.uint32)  # exact: 12 significant bits
    assert np.all(mid.view(np.float32).astype(np.float64) == (lo + hi) / 2)
    return with_signs(np.concatenate([exact, mid, mid - 1, mid + 1]))


def thresholds():
    # Dense sweeps (every float bit pattern) around the points where a format changes regime.
    centres = {
        "fp16 max 65504": 0x477FE000, "fp16 overflow tie 65520": 0x477FF000,
        "fp16 min normal 2^-14": 0x38800000, "fp16 min subnormal 2^-24": 0x33800000,
        "fp16 underflow tie 2^-25": 0x33000000, "bf16 max": 0x7F7F0000,
        "bf16 overflow tie": 0x7F7F8000, "float max": 0x7F7FFFFF, "float min normal": 0x00800000,
    }
    sweeps = [np.arange(max(c - 4096, 0), min(c + 4097, 0x7F800000), dtype=np.uint64)
              for c in centres.values()]
    return with_signs(np.concatenate(sweeps))


def float_subnormal():
    rng = np.random.default_rng(SEED + 1)
    return with_signs(rng.integers(1, 0x00800000, size=20_000, dtype=np.uint64))


def random_bits():
    rng = np.random.default_rng(SEED)
    return u32(rng.integers(0, 1 << 32, size=RANDOM_COUNT, dtype=np.uint64))


def main():
    groups = [special(), bf16_boundaries(), fp16_boundaries(), thresholds(), float_subnormal(),
              random_bits()]
    inputs = np.concatenate(groups)
    classes = np.concatenate([np.full(len(g), i, dtype=np.uint8) for i, g in enumerate(groups)])
    floats = inputs.view(np.float32)
    bf16 = torch.from_numpy(floats.copy()).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    with np.errstate(over="ignore", invalid="ignore"):
        fp16 = floats.astype(np.float16).view(np.uint16)
    with h5py.File(OUT, "w") as f:
        kw = dict(compression="gzip", compression_opts=9, shuffle=True)
        f.create_dataset("input", data=inputs, **kw)
        f.create_dataset("bf16", data=bf16, **kw)
        f.create_dataset("fp16", data=fp16, **kw)
        f.create_dataset("class", data=classes, **kw)
        f.attrs["format_version"] = FORMAT_VERSION
        f.attrs["seed"] = SEED
        f.attrs["class_names"] = ",".join(CLASS_NAMES)
        f.attrs["torch_version"] = str(torch.__version__)
        f.attrs["numpy_version"] = np.__version__
    counts = {name: len(g) for name, g in zip(CLASS_NAMES, groups)}
    print(f"{OUT}: {len(inputs)} values {counts}, {OUT.stat().st_size / 1e6:.2f} MB")


if __name__ == "__main__":
    main()

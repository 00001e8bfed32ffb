#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Seed corpora for the fuzz targets, from the repository's own files: every case config and
suite (fuzz_config), the bad-input corpus's IDX pairs plus a valid one (fuzz_idx, framed as the
target reads them: a 2-byte image-file length, the image file, the label file), and the start of
real text (fuzz_text_corpus: 8 parameter bytes, then text). The result-file seeds come from
write_example_results (scripts/robustness.sh). Usage: make_seeds.py REPO OUT_DIR"""
import glob
import os
import struct
import sys

repo, out = sys.argv[1], sys.argv[2]


def put(target, name, data):
    os.makedirs(os.path.join(out, target), exist_ok=True)
    with open(os.path.join(out, target, name), "wb") as f:
        f.write(data)


for pattern in ["models/*/configs/*.yaml", "suites/*.yaml", "tests/bad_inputs/configs/*.yaml"]:
    for path in sorted(glob.glob(os.path.join(repo, pattern))):
        with open(path, "rb") as f:
            text = f.read()
        name = os.path.basename(os.path.dirname(os.path.dirname(path))) + "_" + os.path.basename(path)
        put("fuzz_config", name, text)
        put("fuzz_config", "set_" + name, b"optimizer.lr=1e-3\n" + text)


def frame(images, labels):
    n = min(len(images), 0xFFFF)
    return struct.pack(">H", n) + images[:n] + labels


def idx(magic, dims, payload):
    return struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in dims) + payload


put("fuzz_idx", "valid_2x28x28", frame(idx(0x803, [2, 28, 28], bytes(range(256)) * 6 + bytes(32)),
                                       idx(0x801, [2], bytes([3, 7]))))
put("fuzz_idx", "valid_3x2x2", frame(idx(0x803, [3, 2, 2], bytes(12)), idx(0x801, [3], bytes([0, 9, 5]))))
for folder in sorted(glob.glob(os.path.join(repo, "tests/bad_inputs/data/idx_*"))):
    files = {os.path.basename(p).split("-")[1]: p for p in glob.glob(os.path.join(folder, "*"))}
    # regular files only, and at most 1 MiB of each: the corpus also holds IDX "files" that are
    # /dev/zero or never end (a seed of them would fill memory)
    wanted = [files.get("images"), files.get("labels")]
    if all(p and os.path.isfile(p) and not p.endswith(".gz") for p in wanted):
        with open(wanted[0], "rb") as a, open(wanted[1], "rb") as b:
            put("fuzz_idx", os.path.basename(folder), frame(a.read(1 << 20), b.read(1 << 20)))

speeches = sorted(glob.glob(os.path.join(repo, "data/sotu/*.txt")))
text = b"The State of the Union is strong. " * 8
if speeches:
    with open(speeches[0], "rb") as f:
        text = f.read(2000)
put("fuzz_text_corpus", "sotu_b4_t16", bytes([3, 15, 7, 0, 1, 0, 1, 0]) + text)
put("fuzz_text_corpus", "short_b1_t64", bytes([0, 63, 0, 0, 0, 0, 0, 0]) + text[:70])
put("fuzz_text_corpus", "tiny", bytes([7, 7, 255, 255, 9, 9, 3, 0]) + b"ab")

#!/usr/bin/python3
"""Writes the bad data files of the bad-input corpus (tests/bad_inputs/data/*): small IDX and
text folders that each break one rule the loaders check. Run from anywhere; idempotent. The
outputs are committed, so the tests do not need Python."""
import gzip
import os
import struct

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def idx(magic, dims, payload):
    return struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in dims) + payload


def folder(name, files):
    path = os.path.join(HERE, name)
    os.makedirs(path, exist_ok=True)
    for old in os.listdir(path):
        os.remove(os.path.join(path, old))  # a symbolic link too, not its target
    for file_name, data in files.items():
        with open(os.path.join(path, file_name), "wb") as f:
            f.write(data)


IMAGES, LABELS = "train-images-idx3-ubyte", "train-labels-idx1-ubyte"
good_images = idx(0x803, [2, 28, 28], bytes(2 * 28 * 28))
good_labels = idx(0x801, [2], bytes([3, 7]))

# header promises MNIST's 60000 images, the file stops after 100 bytes of them
folder("idx_truncated", {IMAGES: idx(0x803, [60000, 28, 28], bytes(100)), LABELS: good_labels})
# a label magic (0x801) on an image file (0x803)
folder("idx_wrong_magic", {IMAGES: idx(0x801, [2, 28, 28], bytes(2 * 28 * 28)), LABELS: good_labels})
# a file shorter than any IDX header
folder("idx_too_short", {IMAGES: b"\x00\x00", LABELS: good_labels})
# 2 images, 3 labels
folder("idx_label_count_mismatch", {IMAGES: good_images, LABELS: idx(0x801, [3], bytes([1, 2, 3]))})
# a label 10 in a 10-class data set
folder("idx_label_out_of_range", {IMAGES: good_images, LABELS: idx(0x801, [2], bytes([3, 10]))})
# the images without their labels
folder("idx_missing_labels", {IMAGES: good_images})
# valid and consistent, but 2 images instead of MNIST's 60000
folder("idx_wrong_count", {IMAGES: good_images, LABELS: good_labels})
# a gzip stream cut in the middle
whole = gzip.compress(idx(0x803, [60000, 28, 28], bytes(60000 * 28 * 28)), mtime=0)
folder("idx_gzip_truncated", {IMAGES + ".gz": whole[: len(whole) // 2], LABELS: good_labels})
# padded: more bytes than the header promises
folder("idx_padded", {IMAGES: good_images + b"\x00" * 7, LABELS: good_labels})

# a header promising 2^32-1 images of 65536 x 65536: refused before its payload is read
folder("idx_header_huge", {IMAGES: idx(0x803, [0xFFFFFFFF, 65536, 65536], b""), LABELS: good_labels})
# a small gzip file that inflates to 64 MiB past what its header promises: read only so far
bomb = gzip.compress(good_images + bytes(64 << 20), mtime=0)
folder("idx_gzip_endless", {IMAGES + ".gz": bomb, LABELS: good_labels})
# the image file is /dev/zero (a symbolic link): refused unopened, as not a regular file
folder("idx_images_dev_zero", {LABELS: good_labels})
os.symlink("/dev/zero", os.path.join(HERE, "idx_images_dev_zero", IMAGES))

# text corpora: an empty folder (no speeches) and one binary speech. A byte-level model reads
# any bytes (no UTF-8 rule to break); the loader refuses a corpus by speech count and size.
folder("text_empty", {".keep": b""})
folder("text_binary", {"1790_george_washington_n.txt": bytes(range(256)) * 4})

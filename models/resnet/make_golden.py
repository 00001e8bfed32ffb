#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# Writes models/resnet/resnet_mini_golden.h5: a PyTorch resnet-mini, 8 real MNIST images, its
# logits, loss, every gradient, running statistics and 10 SGD steps. Leaves out torchvision.
"""Golden file for the C++ ResNet (tests/models/test_resnet_golden.cpp).

Run from anywhere with Debian's Python (the pyenv `python3` has no torch):
    /usr/bin/python3 models/resnet/make_golden.py
The model mirrors models/resnet/resnet.cpp: conv3x3(1->16)+BN+ReLU stem, three stages of
two BasicBlocks (16, 32, 64 channels; stride 2 and a 1x1 conv+BN shortcut at the start of
stages 2 and 3), global average pool, Linear(64->10). Convolutions have no bias. The
module names are the C++ parameter names (named_parameters order = C++ storage order).

Besides the first training step (logits, loss, every gradient, running statistics, and the
eval-mode logits with those statistics), the file holds 10 SGD steps from the same start and
the eval-mode logits after them, with the spread of each under rounding-sized changes
(float64; float32 from weights jittered by 2^-23): the test's tolerances must exceed it.
"""
import argparse
import copy
import pathlib

import h5py
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

REPO = pathlib.Path(__file__).resolve().parents[2]
CONFIG = dict(name="resnet-mini", image_channels=1, image_size=28, classes=10,
              stem_channels=16, stage_channels=(16, 32, 64), stage_blocks=(2, 2, 2))
BATCH = 8
SEED = 1234
MNIST_MEAN, MNIST_STD = 0.1307, 0.3081
# lr 0.001, not a training rate like 0.05: at 0.05 the 10 steps are chaotic (a ReLU input that
# crosses zero under rounding moves a BatchNorm gradient by ~1/sqrt(N·H·W), about 1%, and the
# steps amplify it): PyTorch float32 against float64 differs by 2.6% in loss after 10 steps.
# At 0.001 the losses agree to 1e-5 and the curve still falls (2.50 -> 2.26).
SGD = dict(lr=0.001, momentum=0.9, weight_decay=5e-4)
STEPS = 10


def conv3x3(in_channels, out_channels, stride):
    return nn.Conv2d(in_channels, out_channels, 3, stride=stride, padding=1, bias=False)


class ConvBN(nn.Module):
    """The 1x1 conv + BN shortcut; also the stem (with a 3x3 conv)."""

    def __init__(self, conv, channels):
        super().__init__()
        self.conv = conv
        self.bn = nn.BatchNorm2d(channels)

    def forward(self, x):
        return self.bn(self.conv(x))


class BasicBlock(nn.Module):
    def __init__(self, in_channels, out_channels, stride):
        super().__init__()
        self.conv1 = conv3x3(in_channels, out_channels, stride)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = conv3x3(out_channels, out_channels, 1)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.shortcut = None
        if stride != 1 or in_channels != out_channels:
            conv1x1 = nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False)
            self.shortcut = ConvBN(conv1x1, out_channels)

    def forward(self, x):
        out = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        return F.relu(out + (x if self.shortcut is None else self.shortcut(x)))


class ResnetMini(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        channels = cfg["stem_channels"]
        self.stem = ConvBN(conv3x3(cfg["image_channels"], channels, 1), channels)
        for s, (width, blocks) in enumerate(zip(cfg["stage_channels"], cfg["stage_blocks"])):
            stage = nn.ModuleList()
            for b in range(blocks):
                stage.append(BasicBlock(channels, width, 2 if s > 0 and b == 0 else 1))
                channels = width
            setattr(self, f"stage{s + 1}", stage)
        self.fc = nn.Linear(channels, cfg["classes"])  # default init: uniform(+-1/sqrt(64))
        for module in self.modules():
            if isinstance(module, nn.Conv2d):  # torchvision's ResNet rule
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(module, nn.BatchNorm2d):
                nn.init.ones_(module.weight)
                nn.init.zeros_(module.bias)

    def forward(self, images):
        x = F.relu(self.stem(images))
        for s in range(len(CONFIG["stage_blocks"])):
            for block in getattr(self, f"stage{s + 1}"):
                x = block(x)
        return self.fc(x.mean(dim=(2, 3)))


def mnist_batch():
    """The first BATCH training images, normalised, and their labels."""
    root = REPO / "data" / "mnist"
    images = np.fromfile(root / "train-images-idx3-ubyte", dtype=np.uint8)
    labels = np.fromfile(root / "train-labels-idx1-ubyte", dtype=np.uint8)
    assert int.from_bytes(images[:4].tobytes(), "big") == 2051, "not an IDX image file"
    assert int.from_bytes(labels[:4].tobytes(), "big") == 2049, "not an IDX label file"
    pixels = images[16:16 + BATCH * 28 * 28].reshape(BATCH, 1, 28, 28).astype(np.float32)
    normalised = (pixels / np.float32(255.0) - np.float32(MNIST_MEAN)) / np.float32(MNIST_STD)
    return torch.from_numpy(normalised), torch.from_numpy(labels[8:8 + BATCH].astype(np.int64))


def running_statistics(model):
    return {name: buffer.detach().numpy().astype(np.float32)
            for name, buffer in model.named_buffers() if "running" in name}


def sgd_trajectory(initial, images, labels, dtype=torch.float32, jitter_seed=None):
    """STEPS SGD steps in training mode on the one batch, from a copy of `initial` (its running
    statistics included); then the eval-mode logits. jitter_seed: first multiply every
    parameter by (1 + 2^-23 randn), a rounding-sized change."""
    model = copy.deepcopy(initial).to(dtype)
    if jitter_seed is not None:
        generator = torch.Generator().manual_seed(jitter_seed)
        with torch.no_grad():
            for p in model.parameters():
                p.mul_(1 + 2.0 ** -23 * torch.randn(p.shape, generator=generator, dtype=dtype))
    images = images.to(dtype)
    optimizer = torch.optim.SGD(model.parameters(), **SGD)
    losses, grad_norms = [], []
    for _ in range(STEPS):
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(images), labels)
        loss.backward()
        squared = sum((p.grad.double() ** 2).sum() for p in model.parameters())
        grad_norms.append(torch.sqrt(squared).item())
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        eval_logits = model(images)
    return (np.array(losses), np.array(grad_norms), eval_logits.double().numpy(),
            F.cross_entropy(eval_logits, labels).item())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_out = pathlib.Path(__file__).with_name("resnet_mini_golden.h5")
    parser.add_argument("--out", default=str(default_out))
    args = parser.parse_args()

    torch.manual_seed(SEED)
    torch.set_num_threads(1)  # deterministic reductions
    model = ResnetMini(CONFIG)
    initial = copy.deepcopy(model)  # the SGD runs start from the initial running statistics
    images, labels = mnist_batch()
    params = {name: p.detach().numpy().astype(np.float32) for name, p in model.named_parameters()}

    model.train()
    logits = model(images)
    loss = F.cross_entropy(logits, labels)
    loss.backward()
    grads = {name: p.grad.numpy().astype(np.float32) for name, p in model.named_parameters()}
    model.eval()  # the running statistics of that one training forward
    with torch.no_grad():
        eval_logits_initial = model(images)

    losses, grad_norms, eval_logits, eval_loss = sgd_trajectory(initial, images, labels)
    # How far the same steps move under rounding-sized changes: float64, and float32 from
    # jittered weights. ReLU kinks make the trajectory chaotic, so this bounds what any
    # float32 implementation can be asked to match.
    variants = [sgd_trajectory(initial, images, labels, torch.float64)]
    variants += [sgd_trajectory(initial, images, labels, jitter_seed=k) for k in range(3)]
    loss_spread = np.max([np.abs(v[0] - losses) for v in variants], axis=0)
    norm_spread = np.max([np.abs(v[1] - grad_norms) for v in variants], axis=0)
    eval_spread = max(np.abs(v[2] - eval_logits).max() for v in variants)
    eval_loss_spread = max(abs(v[3] - eval_loss) for v in variants)

    with h5py.File(args.out, "w") as f:
        f.attrs["format_version"] = 1
        f.attrs["torch_version"] = str(torch.__version__)
        f.attrs["seed"] = SEED
        f.attrs["image_source"] = (f"data/mnist/train-images-idx3-ubyte images [0, {BATCH}), "
                                   f"(x/255 - {MNIST_MEAN})/{MNIST_STD}")
        for key, value in CONFIG.items():
            f.attrs[f"config_{key}"] = value
        f.attrs["batch"] = BATCH
        f.attrs["sgd_lr"], f.attrs["sgd_momentum"] = SGD["lr"], SGD["momentum"]
        f.attrs["sgd_weight_decay"] = SGD["weight_decay"]
        f.attrs["batchnorm_momentum"], f.attrs["batchnorm_eps"] = 0.1, 1e-5
        f["images"] = images.numpy()
        f["labels"] = labels.numpy().astype(np.int32)
        f["logits"] = logits.detach().numpy().astype(np.float32)
        f["loss"] = np.float32(loss.item())
        # Uncompressed: gzip makes float32 weights larger here (chunk overhead, random bits).
        for name, value in params.items():
            f[f"params/{name}"] = value
        for name, value in grads.items():
            f[f"grads/{name}"] = value
        for name, value in running_statistics(model).items():
            f[f"running_stats/{name}"] = value
        f["eval_logits"] = eval_logits_initial.numpy().astype(np.float32)
        f["losses_10_steps"] = losses.astype(np.float32)
        f["grad_norms_10_steps"] = grad_norms.astype(np.float32)
        f["eval_logits_after_10_steps"] = eval_logits.astype(np.float32)
        f["eval_loss_after_10_steps"] = np.float32(eval_loss)
        # largest relative change of each under rounding-sized perturbations
        f.attrs["losses_10_steps_spread"] = np.max(loss_spread / losses)
        f.attrs["grad_norms_10_steps_spread"] = np.max(norm_spread / grad_norms)
        f.attrs["eval_logits_after_10_steps_spread"] = eval_spread / np.abs(eval_logits).max()
        f.attrs["eval_loss_after_10_steps_spread"] = eval_loss_spread / eval_loss
    print(f"wrote {args.out}: loss {loss.item():.6f}, 10-step losses {losses[0]:.4f} -> "
          f"{losses[-1]:.4f}, eval loss after {eval_loss:.4f}")
    for what, spread, values in (("losses", loss_spread, losses),
                                 ("grad norms", norm_spread, grad_norms)):
        print(f"relative spread, 10-step {what}:", np.array2string(spread / values, precision=1))
    print(f"relative spread, eval logits after: {eval_spread / np.abs(eval_logits).max():.1e}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The PyTorch twin of examples/cifar10: the DDP tutorial's CIFAR-10 program made whole.

torchvision's CIFAR10 on the Python batches of --data_dir, a DistributedSampler (set_epoch
each epoch) and a DataLoader with the per-process batch size, a ResNet-18 for 32x32 inputs
(3x3 stem, no max-pool; --width channels in the first stage, torchvision's BasicBlock and its
state_dict names) wrapped in DistributedDataParallel, cross entropy, SGD with momentum 0.9
and weight decay 5e-4 on a cosine schedule stepped every update (the Go trainer's: peak *
(1 + cos(pi * u / T)) / 2 after u updates of T), BatchNorm in training mode on the batch's
statistics, exact test accuracy (each test image counted once over the ranks), and rank 0
saving the checkpoint while the others wait.

  python scripts/cifar10_torch.py --data_dir DIR [--width 64] [--epochs 5]
  torchrun --nproc_per_node 2 scripts/cifar10_torch.py --data_dir DIR
  python scripts/cifar10_torch.py --make_data DIR --train_images 10000 --test_images 2000

--init FILE starts from the weights examples/cifar10 --save_init FILE exported (safetensors,
these state_dict names); with --no_augment and --no_shuffle on both sides the two programs
see the same batches in the same order (the files' order). --losses FILE writes each step's
loss (the mean over the global batch) as JSON lines; the last line printed is a JSON summary
(wall time, images/s, accuracy). Without torchrun's variables it runs as one process of a
group of one, on the same code path.

--make_data writes a CIFAR-10-format folder (cifar-10-batches-py: data_batch_1..5,
test_batch, batches.meta, as Python 2's cPickle wrote them, through make_image_fixtures.py's
writer) of learnable synthetic images: each class a tint and a stripe direction, with noise.
"""
import argparse
import json
import math
import os
import socket
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, Subset
from torchvision import transforms

MEAN, STD = (0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)
NAMES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]


class CIFAR10Files(torchvision.datasets.CIFAR10):
    """torchvision's CIFAR10 on files that are not the published ones: the same reading
    (pickle.load(f, encoding="latin1"), HWC uint8, PIL images), no checksum test (the
    published checksums are those of the real batches)."""
    train_list = [[f"data_batch_{i}", None] for i in range(1, 6)]
    test_list = [["test_batch", None]]
    meta = {"filename": "batches.meta", "key": "label_names", "md5": None}


def cifar_root(d):
    """The folder above cifar-10-batches-py, given it or the folder itself."""
    d = os.path.abspath(d)
    if os.path.basename(d) == "cifar-10-batches-py":
        return os.path.dirname(d)
    if not os.path.isdir(os.path.join(d, "cifar-10-batches-py")):
        sys.exit(f"--data_dir {d}: no cifar-10-batches-py folder in it")
    return d


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (x if self.downsample is None else self.downsample(x)))


class ResNet18(nn.Module):
    """ResNet-18 for 32x32 inputs: a 3x3 stem without max-pool, four stages of two blocks
    (width, 2, 4, 8 x width channels; strides 1, 2, 2, 2), global average pooling, a linear
    classifier."""

    def __init__(self, width=64, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        cin = width
        for stage in range(4):
            cout, stride = width << stage, 1 if stage == 0 else 2
            blocks = [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
            setattr(self, f"layer{stage + 1}", nn.Sequential(*blocks))
            cin = cout
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        for stage in range(4):
            h = getattr(self, f"layer{stage + 1}")(h)
        return self.fc(h.mean(dim=(2, 3)))


def make_data(out, n_train, n_test, seed):
    """Writes out/cifar-10-batches-py with n_train training images in 5 batches and n_test
    test images of the synthetic classes."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from make_image_fixtures import py2_pickle  # the project's writer of Python 2 pickles

    rng = np.random.default_rng(seed)
    tints = np.array([[200, 60, 60], [60, 180, 60], [60, 80, 200], [128, 128, 128], [200, 190, 50]], np.float64)

    def images(n):
        labels = rng.integers(0, 10, n)
        period = rng.integers(4, 9, n)[:, None, None]
        phase = rng.integers(0, 8, n)[:, None, None]
        yy, xx = np.mgrid[0:32, 0:32]
        along = np.where((labels % 2 == 1)[:, None, None], xx[None], yy[None])
        stripe = np.where(((along + phase) // period) % 2 == 0, 1.2, 0.6)
        hwc = tints[labels // 2][:, None, None, :] * stripe[..., None] + rng.normal(0, 20, (n, 32, 32, 3))
        hwc = np.clip(hwc, 0, 255).astype(np.uint8)
        return hwc.transpose(0, 3, 1, 2).reshape(n, 3072).copy(), [int(v) for v in labels]

    d = os.path.join(out, "cifar-10-batches-py")
    os.makedirs(d, exist_ok=True)
    per = [n_train // 5 + (1 if i < n_train % 5 else 0) for i in range(5)]
    parts = [(f"data_batch_{i + 1}", per[i]) for i in range(5)] + [("test_batch", n_test)]
    for name, n in parts:
        data, labels = images(n)
        blob = {"batch_label": f"{name} (synthetic)", "labels": labels, "data": data,
                "filenames": [f"{name}_{k}.png" for k in range(n)]}
        with open(os.path.join(d, name), "wb") as f:
            f.write(py2_pickle(blob))
    with open(os.path.join(d, "batches.meta"), "wb") as f:
        f.write(py2_pickle({"num_cases_per_batch": per[0], "label_names": NAMES, "num_vis": 3072}))
    print(f"wrote {n_train} training and {n_test} test images to {d}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def setup():
    """Joins torchrun's group, or makes a group of one."""
    if "RANK" in os.environ:
        dist.init_process_group("gloo")
    else:
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1)
    return dist.get_rank(), dist.get_world_size()


def load_init(model, path):
    from safetensors.torch import load_file

    state = load_file(path)
    own = model.state_dict()
    for k, v in state.items():
        if k in own and own[k].dtype != v.dtype:
            state[k] = v.to(own[k].dtype)
    missing, unexpected = model.load_state_dict(state, strict=False)
    # num_batches_tracked is 0 at the start; the Go program makes it with the training step.
    missing = [k for k in missing if not k.endswith("num_batches_tracked")]
    if missing or unexpected:
        sys.exit(f"--init {path}: missing {sorted(missing)}, unexpected {sorted(unexpected)} (want the names of "
                 f"examples/cifar10 --save_init with the same --width)")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data_dir")
    p.add_argument("--make_data", metavar="DIR")
    p.add_argument("--train_images", type=int, default=10000)
    p.add_argument("--test_images", type=int, default=2000)
    p.add_argument("--width", type=int, default=64)
    p.add_argument("--batch_size", type=int, default=128, help="per process, as the tutorial's DataLoader")
    p.add_argument("--learning_rate", "--lr", type=float, default=0.1)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--weight_decay", type=float, default=5e-4)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--max_steps", type=int, default=0)
    p.add_argument("--no_augment", action="store_true")
    p.add_argument("--no_shuffle", action="store_true")
    p.add_argument("--workers", type=int, default=2, help="DataLoader's num_workers")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--double", action="store_true", help="train in float64 (to measure float32's own rounding drift)")
    p.add_argument("--init", help="a safetensors file of initial weights (examples/cifar10 --save_init)")
    p.add_argument("--losses", help="write each step's loss here (JSON lines)")
    p.add_argument("--output_dir", default="cifar10_torch_out")
    a = p.parse_args()
    if a.make_data:
        make_data(a.make_data, a.train_images, a.test_images, a.seed)
        return
    if not a.data_dir:
        p.error("--data_dir is required (or --make_data)")

    rank, world = setup()
    torch.manual_seed(a.seed)
    norm = [transforms.ToTensor(), transforms.Normalize(MEAN, STD)]
    aug = [] if a.no_augment else [transforms.RandomCrop(32, padding=4), transforms.RandomHorizontalFlip()]
    root = cifar_root(a.data_dir)
    train_set = CIFAR10Files(root, train=True, transform=transforms.Compose(aug + norm))
    test_set = CIFAR10Files(root, train=False, transform=transforms.Compose(norm))
    sampler = DistributedSampler(train_set, num_replicas=world, rank=rank, shuffle=not a.no_shuffle, seed=a.seed)
    loader = DataLoader(train_set, batch_size=a.batch_size, sampler=sampler, num_workers=a.workers,
                        persistent_workers=a.workers > 0)
    # Each rank tests a disjoint slice, so every test image counts once (no padding).
    test_loader = DataLoader(Subset(test_set, range(rank, len(test_set), world)), batch_size=a.batch_size,
                             num_workers=a.workers)

    dtype = torch.float64 if a.double else torch.float32
    model = ResNet18(a.width, len(train_set.classes)).to(dtype)
    if a.init:  # in the model's dtype: float64 weights (examples/cifar10 --float64) keep every bit
        load_init(model, a.init)
    ddp = DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=a.learning_rate, momentum=a.momentum, weight_decay=a.weight_decay)
    total = a.epochs * len(loader)
    if a.max_steps > 0:
        total = min(total, a.max_steps)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda u: 0.5 * (1 + math.cos(math.pi * min(u / total, 1))))
    losses = open(a.losses, "w") if a.losses and rank == 0 else None

    step, images, train_s, accuracy = 0, 0, 0.0, float("nan")
    start = time.perf_counter()
    for epoch in range(a.epochs):
        sampler.set_epoch(epoch)
        ddp.train()
        t0 = time.perf_counter()
        for x, y in loader:
            loss = F.cross_entropy(ddp(x.to(dtype)), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            lr = opt.param_groups[0]["lr"]
            opt.step()
            sched.step()
            step += 1
            images += len(y) * world
            mean = loss.detach().clone()
            dist.all_reduce(mean)
            if losses:
                losses.write(json.dumps({"step": step, "loss": mean.item() / world, "lr": lr}) + "\n")
            if step >= total:
                break
        train_s += time.perf_counter() - t0
        ddp.eval()
        right = torch.zeros(2, dtype=torch.int64)
        with torch.no_grad():
            for x, y in test_loader:
                right[0] += (ddp(x.to(dtype)).argmax(1) == y).sum()
                right[1] += len(y)
        dist.all_reduce(right)
        accuracy = right[0].item() / right[1].item()
        if rank == 0:
            print(f"epoch {epoch + 1}: step {step}, test accuracy {accuracy:.4f}", flush=True)
            os.makedirs(a.output_dir, exist_ok=True)
            torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": epoch + 1,
                        "step": step}, os.path.join(a.output_dir, "checkpoint.pt"))
        dist.barrier()  # the others wait for rank 0's checkpoint
        if step >= total:
            break
    if losses:
        losses.close()
    if rank == 0:
        print(json.dumps({"steps": step, "images": images, "wall_s": time.perf_counter() - start, "train_s": train_s,
                          "images_per_s": images / train_s, "accuracy": accuracy, "width": a.width,
                          "processes": world, "threads": torch.get_num_threads()}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

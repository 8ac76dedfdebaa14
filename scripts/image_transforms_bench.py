#!/usr/bin/env python3
"""Side-by-side speed of data/image/transforms and Pillow/torchvision, one thread each, in one
run: Resize(224) of a 500x375 photo (bilinear, the shorter edge: 298x224) and
RandomResizedCrop(224) + RandomHorizontalFlip + ToTensor + Normalize per image.

  image_transforms_bench.py [--go-bench-time 3s]

Runs `go test -bench` in data/image/transforms (from the repository root), then the same work
with Pillow 13 and torchvision 0.29 on a PIL image (the chelsea photo enlarged to 500x375 with
bicubic, as the Go benchmark makes it), and prints images/s for both with the CPU and `uptime`.
"""

import argparse
import os
import platform
import re
import subprocess
import time

import skimage
import torch
from PIL import Image
from torchvision import transforms as T


def best_rate(fn, n, rounds=5):
    """Best images/s per wall second and per CPU second of this process over rounds."""
    wall = cpu = 0.0
    for _ in range(rounds):
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(n):
            fn()
        wall = max(wall, n / (time.perf_counter() - t0))
        cpu = max(cpu, n / (time.process_time() - c0))
    return wall, cpu


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--go-bench-time", default="3s")
    a = ap.parse_args()
    torch.set_num_threads(1)
    up_before = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()

    go = subprocess.run(
        ["go", "test", "-run", "^$", "-bench", ".", "-benchtime", a.go_bench_time, "-cpu", "1", "./data/image/transforms"],
        capture_output=True, text=True, env=dict(os.environ, GOMAXPROCS="1"),
    )
    if go.returncode != 0:
        raise SystemExit(go.stdout + go.stderr)
    rates = {}
    for line in go.stdout.splitlines():
        m = re.match(r"Benchmark(\S+?)(?:-\d+)?\s", line)
        if m:
            wall = re.search(r"([\d.]+) images/s\b", line)
            cpu = re.search(r"([\d.]+) images/cpu-s", line)
            rates[m.group(1)] = (float(wall.group(1)) if wall else 0, float(cpu.group(1)) if cpu else 0)

    src = Image.open(os.path.join(os.path.dirname(skimage.__file__), "data", "chelsea.png")).convert("RGB")
    photo = src.crop((150, 60, 214, 108)).resize((500, 375), Image.Resampling.BICUBIC)
    resize = T.Resize(224)
    train = T.Compose(
        [
            T.RandomResizedCrop(224),
            T.RandomHorizontalFlip(),
            T.ToTensor(),
            T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
        ]
    )
    py_resize = best_rate(lambda: resize(photo), 300)
    py_train = best_rate(lambda: train(photo), 300)
    up_after = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()

    print(f"CPU: {cpu_name()}, {os.cpu_count()} cores; one thread each (GOMAXPROCS=1, torch.set_num_threads(1))")
    print(f"uptime before: {up_before}")
    print(f"uptime after:  {up_after}")
    print("images/s per wall second (per CPU second of the process)")
    print(f"{'work (500x375 photo)':50s} {'goaccel':>16s} {'Pillow/torchvision':>20s}")
    for label, key, py in [
        ("Resize(224), bilinear (298x224)", "Resize500x375To224", py_resize),
        ("RandomResizedCrop(224)+flip+ToTensor+Normalize", "RandomResizedCropFlipNormalize", py_train),
    ]:
        g = rates.get(key, (0, 0))
        print(f"{label:50s} {g[0]:7.0f} ({g[1]:6.0f}) {py[0]:11.0f} ({py[1]:6.0f})")


if __name__ == "__main__":
    main()

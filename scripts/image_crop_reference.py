#!/usr/bin/env python3
"""Histograms of torchvision's RandomResizedCrop.get_params windows, for
data/image/transforms' TestRandomResizedCropMatchesTorchvision (a two-sample
Kolmogorov-Smirnov test per statistic against goaccel's own draws).

  image_crop_reference.py OUT.json

For each configuration (image size, scale, ratio), N draws seeded with torch.manual_seed(0);
per statistic (top i, left j, height h, width w, and the area fraction h*w/(H*W) in 1/1000
bins) the count of every value, which is all a two-sample KS test of a discrete variable
needs. Pins: torch 2.15, torchvision 0.29 (the torch venv of `make torch-venv`).
"""

import json
import sys
from collections import Counter

import torch
import torchvision
from torchvision import transforms as T

N = 100_000
CONFIGS = [
    # (name, height, width, scale, ratio)
    ("imagenet_500x375", 375, 500, (0.08, 1.0), (3 / 4, 4 / 3)),
    ("portrait_300x451", 451, 300, (0.08, 1.0), (3 / 4, 4 / 3)),
    ("cifar_32", 32, 32, (0.08, 1.0), (3 / 4, 4 / 3)),
    # Often no try fits: the fallback's share shows.
    ("panorama_1000x120", 120, 1000, (0.08, 1.0), (3 / 4, 4 / 3)),
    ("narrow_scale_ratio", 224, 224, (0.5, 0.9), (0.5, 2.0)),
]


def main():
    out = sys.argv[1]
    torch.set_num_threads(1)
    result = {"torch": torch.__version__, "torchvision": torchvision.__version__, "draws": N, "configs": []}
    for name, h, w, scale, ratio in CONFIGS:
        torch.manual_seed(0)
        img = torch.zeros(1, h, w, dtype=torch.uint8)
        stats = {k: Counter() for k in ("top", "left", "height", "width", "area")}
        for _ in range(N):
            i, j, ch, cw = T.RandomResizedCrop.get_params(img, scale, ratio)
            stats["top"][i] += 1
            stats["left"][j] += 1
            stats["height"][ch] += 1
            stats["width"][cw] += 1
            stats["area"][int(1000 * ch * cw / (h * w))] += 1
        result["configs"].append(
            {
                "name": name,
                "height": h,
                "width": w,
                "scale": list(scale),
                "ratio": list(ratio),
                "counts": {k: sorted([v, n] for v, n in c.items()) for k, c in stats.items()},
            }
        )
    with open(out, "w") as f:
        json.dump(result, f, separators=(",", ":"))


if __name__ == "__main__":
    main()

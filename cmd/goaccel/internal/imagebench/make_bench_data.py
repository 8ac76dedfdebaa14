"""Writes the input-pipeline benchmark's files (imagebench) into a folder.

    $GOACCEL_TORCH_PYTHON cmd/goaccel/internal/imagebench/make_bench_data.py OUT [--jpegs 2000] [--cifar 10000]

needs numpy, Pillow and scikit-image 0.26.0 (the torch venv). It writes, in OUT:
  cifar-10-batches-py/   CIFAR-10's Python batches (Python 2 pickles, as the real ones), 5
                         training batches of CIFAR/5 images and a test batch: 32x32 crops of
                         scikit-image's photos, downscaled as CIFAR's were
  png32/<class>/*.png    the same training images as 32x32 PNG files (Pillow)
  jpeg/<class>/*.jpg     JPEG photos of 500x375 (ImageNet's typical size): random crops of
                         scikit-image's colour photos, resized with Pillow's bicubic, quality 75
                         4:2:0 (Pillow's default)
"""
import argparse
import os
import sys

import numpy as np
from PIL import Image
import skimage.data

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "scripts"))
from make_image_fixtures import py2_pickle  # noqa: E402  (CIFAR's Python 2 pickle writer)

PHOTOS = ["astronaut", "coffee", "chelsea", "stereo_motorcycle", "rocket", "immunohistochemistry", "hubble_deep_field", "retina"]
CLASSES = 10


def photos():
    out = []
    for name in PHOTOS:
        a = getattr(skimage.data, name)()
        if isinstance(a, tuple):
            a = a[0]
        if a.ndim == 2:
            a = np.stack([a] * 3, -1)
        out.append(Image.fromarray(a[..., :3].astype(np.uint8)))
    return out


def crop(rng, im, w, h):
    """A random crop of im with aspect w:h covering 50-100% of its shorter fit, resized to w x h."""
    W, H = im.size
    s = rng.uniform(0.5, 1.0) * min(W / w, H / h)
    cw, ch = max(1, int(w * s)), max(1, int(h * s))
    x, y = rng.integers(0, W - cw + 1), rng.integers(0, H - ch + 1)
    c = im.crop((x, y, x + cw, y + ch)).resize((w, h), Image.BICUBIC)
    if rng.random() < 0.5:
        c = c.transpose(Image.FLIP_LEFT_RIGHT)
    return c


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--jpegs", type=int, default=2000)
    ap.add_argument("--cifar", type=int, default=10000)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    ph = photos()

    py = os.path.join(a.out, "cifar-10-batches-py")
    os.makedirs(py, exist_ok=True)
    per = a.cifar // 5
    k = 0
    for b in range(6):
        n = per if b < 5 else max(per // 5, 1)
        imgs = [crop(rng, ph[rng.integers(len(ph))], 32, 32) for _ in range(n)]
        labels = [int(x) for x in rng.integers(0, CLASSES, n)]
        arr = np.stack([np.asarray(m).transpose(2, 0, 1).reshape(-1) for m in imgs]).astype(np.uint8)
        name = "data_batch_%d" % (b + 1) if b < 5 else "test_batch"
        d = {"batch_label": "bench batch", "labels": labels, "data": arr,
             "filenames": ["img_%d.png" % i for i in range(n)]}
        with open(os.path.join(py, name), "wb") as f:
            f.write(py2_pickle(d))
        if b < 5:
            for m, l in zip(imgs, labels):
                d = os.path.join(a.out, "png32", "c%d" % l)
                os.makedirs(d, exist_ok=True)
                m.save(os.path.join(d, "%05d.png" % k))
                k += 1
    meta = {"label_names": ["c%d" % i for i in range(CLASSES)], "num_cases_per_batch": per, "num_vis": 3072}
    with open(os.path.join(py, "batches.meta"), "wb") as f:
        f.write(py2_pickle(meta))

    for i in range(a.jpegs):
        d = os.path.join(a.out, "jpeg", "c%d" % (i % CLASSES))
        os.makedirs(d, exist_ok=True)
        crop(rng, ph[i % len(ph)], 500, 375).save(os.path.join(d, "%05d.jpg" % i), quality=75)


if __name__ == "__main__":
    main()

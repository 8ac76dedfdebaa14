"""torchvision's side of imagebench: images/s through a DataLoader on the files
make_bench_data.py wrote, with the same transforms as imagebench.Pipeline.

    $GOACCEL_TORCH_PYTHON cmd/goaccel/internal/imagebench/pipeline_torch.py DIR [--workers 2] [--batch 128]

Each line: what, images, seconds, images/s, timed from the first batch to the last (the first
batch, which includes the workers' start, not counted), one shuffled epoch, drop_last.
"""
import argparse
import gc
import os
import resource
import time
from multiprocessing import Pool

import torch
import torchvision
from PIL import Image
from torchvision import transforms as T

CIFAR_NORM = T.Normalize((0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616))
IMAGENET_NORM = T.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))


# torchvision's CIFAR10 on the benchmark's batches: they are not the published ones, so their
# checksums differ; the integrity checks are skipped, nothing else changes.
torchvision.datasets.cifar.check_integrity = lambda *args, **kwargs: True
CIFAR10 = torchvision.datasets.CIFAR10


def cpu():
    """CPU seconds (user + system) of this process and of its children that were waited for."""
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def report(what, n, s, c):
    print("%s: %d images in %.2f s = %.0f images/s, %.0f images per CPU-second" % (what, n, s, n / s, n / c), flush=True)


def run(what, ds, workers, batch):
    dl = torch.utils.data.DataLoader(ds, batch_size=batch, shuffle=True, num_workers=workers, drop_last=True)
    n, start = 0, None
    it = iter(dl)
    for x, _ in it:
        if start is None:  # the workers' CPU counts once they exit: the whole epoch's, less a batch's share
            start, c0 = time.perf_counter(), cpu()
            continue
        n += x.shape[0]
    s = time.perf_counter() - start
    del it
    gc.collect()  # the iterator's shutdown joins the workers, so their CPU time is counted
    c = cpu() - c0
    report("torch %s, num_workers=%d" % (what, workers), n, s, c * n / (n + batch))


def load(p):
    with Image.open(p) as im:
        im.convert("RGB")


def decode_only(what, folder, workers):
    files = sorted(os.path.join(r, f) for r, _, fs in os.walk(folder) for f in fs)
    c0 = cpu()
    pool = Pool(workers)
    start = time.perf_counter()
    pool.map(load, files, chunksize=32)
    s = time.perf_counter() - start
    pool.close()
    pool.join()
    report("Pillow %s decode only (open + convert RGB), %d processes" % (what, workers), len(files), s, cpu() - c0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=128)
    a = ap.parse_args()
    small = T.Compose([T.RandomCrop(32, padding=4), T.RandomHorizontalFlip(), T.ToTensor(), CIFAR_NORM])
    run("cifar", CIFAR10(a.dir, train=True, transform=small), a.workers, a.batch)
    run("png32", torchvision.datasets.ImageFolder(os.path.join(a.dir, "png32"), transform=small), a.workers, a.batch)
    decode_only("png32", os.path.join(a.dir, "png32"), a.workers)
    for name, crop in [("jpeg CenterCrop(224)", T.CenterCrop(224)), ("jpeg RandomResizedCrop(224)", T.RandomResizedCrop(224))]:
        tf = T.Compose([crop, T.RandomHorizontalFlip(), T.ToTensor(), IMAGENET_NORM])
        run(name, torchvision.datasets.ImageFolder(os.path.join(a.dir, "jpeg"), transform=tf), a.workers, a.batch)
    decode_only("jpeg", os.path.join(a.dir, "jpeg"), a.workers)


if __name__ == "__main__":
    main()

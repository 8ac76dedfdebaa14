#!/usr/bin/env python3
"""transformers' pipeline("text-classification") on the folder TestPredictorFigures exports
(models/auto/figures_test.go), on the same texts: the first N lines of rt-polarity.pos and of
rt-polarity.neg, trimmed. Prints texts/s at batch 32 (best of 3, after a first pass), the
p50/p99 latency of one text (200 texts, each once untimed first), and writes the predictions
(top label and score) as JSON for GOACCEL_PREDICT_PIPELINE.

Usage (a venv with torch and transformers, outside the repository):
    python scripts/bench_predict.py FOLDER OUT.json [DATA_DIR] [--threads 2]
"""

import argparse
import json
import os
import statistics
import time
import warnings

import torch
from transformers import pipeline

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def polarity(data, n):
    out = []
    for name in ("rt-polarity.pos", "rt-polarity.neg"):
        with open(os.path.join(data, name), encoding="utf-8") as f:
            for i, line in enumerate(f):
                if i >= n:
                    break
                out.append(line.strip())
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("folder")
    ap.add_argument("out")
    ap.add_argument("data", nargs="?", default=os.path.join(REPO, "..", "shared", "data", "rt-polarity"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("-n", type=int, default=256)
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    torch.set_num_threads(a.threads)
    texts = polarity(a.data, a.n)
    clf = pipeline("text-classification", model=a.folder, tokenizer=a.folder, device="cpu",
                   truncation=True, max_length=128)
    with torch.inference_mode():
        preds = clf(texts, batch_size=32)
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            clf(texts, batch_size=32)
            best = min(best, time.perf_counter() - start)
        singles = texts[:200]
        for s in singles:
            clf(s)
        lat = []
        for s in singles:
            start = time.perf_counter()
            clf(s)
            lat.append((time.perf_counter() - start) * 1000)
    lat.sort()
    figures = {"torch": torch.__version__, "threads": a.threads, "texts": len(texts),
               "throughput_b32": len(texts) / best, "p50_ms": statistics.median(lat),
               "p99_ms": lat[len(lat) * 99 // 100]}
    print(json.dumps(figures))
    with open(a.out, "w") as f:
        json.dump({"figures": figures, "texts": texts,
                   "predictions": [{"label": p["label"], "score": p["score"]} for p in preds]}, f)


if __name__ == "__main__":
    main()

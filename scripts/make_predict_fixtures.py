#!/usr/bin/env python3
"""Write models/auto/testdata/predict_pipeline.json: what transformers' text-classification
pipeline answers on models/deberta/testdata/tiny (a DeBERTa-v3 classifier of 3 classes with
its spm.model), for auto.Predictor's parity test.

For a list of texts it records pipeline(..., top_k=None)'s score of every class, in two
set-ups of the same weights: the folder as it is (problem_type unset: softmax), and with
config.json's id2label named and problem_type "multi_label_classification" (sigmoid). The
texts are truncated at MAX_LEN tokens, as the Go predictor's tokenizer truncates them.

Pinned version (asserted): transformers 5.25.0.

Usage (a venv with torch, transformers, sentencepiece, outside the repository):
    /work/venv-torch/bin/python scripts/make_predict_fixtures.py
"""

import json
import os
import shutil
import tempfile

import transformers
from transformers import pipeline

TRANSFORMERS_VERSION = "5.25.0"
if transformers.__version__ != TRANSFORMERS_VERSION:
    raise SystemExit(f"transformers {transformers.__version__} found; this script is pinned to {TRANSFORMERS_VERSION}")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(REPO, "models", "deberta", "testdata", "tiny")
OUT = os.path.join(REPO, "models", "auto", "testdata", "predict_pipeline.json")
MAX_LEN = 32
TEXTS = [
    "a charming , often hilarious movie .",
    "dull , lifeless and far too long .",
    "the film is what it is",
    "Café Müller in Zürich — naïve résumé",
    "東京 は 日本 の 首都 です",
    "I love 🍕 and 🎉",
    "",
    " ".join(["word"] * 80),  # longer than MAX_LEN: truncated
    "[CLS] special [SEP] tokens [MASK] in text",
]


def scores(folder):
    clf = pipeline("text-classification", model=folder, tokenizer=folder, top_k=None, device="cpu",
                   truncation=True, max_length=MAX_LEN)
    out = []
    for text in TEXTS:
        res = clf(text)
        if res and isinstance(res[0], list):  # a list of one text's results
            res = res[0]
        by_label = {r["label"]: r["score"] for r in res}
        out.append(by_label)
    return out


def main():
    single = scores(SRC)
    d = tempfile.mkdtemp()
    for name in os.listdir(SRC):
        shutil.copy(os.path.join(SRC, name), d)
    with open(os.path.join(d, "config.json")) as f:
        cfg = json.load(f)
    names = ["negative", "neutral", "positive"]
    cfg["id2label"] = {str(i): n for i, n in enumerate(names)}
    cfg["label2id"] = {n: i for i, n in enumerate(names)}
    cfg["problem_type"] = "multi_label_classification"
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f)
    multi = scores(d)
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump({"transformers": TRANSFORMERS_VERSION, "max_len": MAX_LEN, "texts": TEXTS, "labels": names,
                   "single_label": single, "multi_label": multi}, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()

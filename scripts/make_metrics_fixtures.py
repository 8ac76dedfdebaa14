#!/usr/bin/env python3
"""Write the parity fixtures of package metrics: the reference libraries' figures on random cases.

  * metrics/testdata/entities.json: seqeval's entity-level scores (classification_report's
    per-type, micro, macro and weighted precision, recall, F1 and support; accuracy_score) on
    random IOB2 tag sequences, in its default mode and in mode="strict" with scheme=IOB2. The
    tags are drawn so that I- after O, I- after another type, B- after I- of the same type and
    empty sentences are common. Entities (metrics/entities.go) must give the same figures.
  * metrics/testdata/multilabel.json: scikit-learn's precision_recall_fscore_support (per
    label, micro, macro) and accuracy_score (subset accuracy) on random label indicator
    matrices, the predictions being sigmoid(logit) > threshold of random logits (some exactly
    0), with sparse columns so that labels with no gold and no predicted example occur.
    Padding rows (real=false) hold values the Go side must not read (ragged rows, labels out
    of range); the references see only the real rows.
  * metrics/testdata/regression.json: scikit-learn's mean_squared_error and
    mean_absolute_error, scipy.stats.pearsonr and spearmanr on random vectors with ties; a
    correlation scipy gives as NaN (constant input) is written as null.

Pinned versions (asserted): seqeval 1.2.2 (its last release), scikit-learn 1.9.1, scipy 1.17.1,
numpy 2.4.6. Seeded: the same versions write the same files.

Usage (a venv outside the repository):
    python3 -m venv /work/venv-metrics
    /work/venv-metrics/bin/pip install seqeval==1.2.2 scikit-learn==1.9.1 scipy==1.17.1 numpy==2.4.6
    /work/venv-metrics/bin/python scripts/make_metrics_fixtures.py
"""

import json
import math
import os
import random
import warnings
from importlib.metadata import version

import numpy as np
import scipy
import scipy.stats
import sklearn
from seqeval.metrics import accuracy_score as seq_accuracy
from seqeval.metrics import classification_report, f1_score
from seqeval.scheme import IOB2
from sklearn.metrics import accuracy_score, mean_absolute_error, mean_squared_error, precision_recall_fscore_support

VERSIONS = {"seqeval": "1.2.2", "scikit-learn": "1.9.1", "scipy": "1.17.1", "numpy": "2.4.6"}
found = {name: version(name) for name in VERSIONS}
if found != VERSIONS:
    raise SystemExit(f"found {found}; this script is pinned to {VERSIONS}")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(REPO, "metrics", "testdata")

# The reference libraries warn about every ill-defined score (they then give 0); that is the case
# being recorded, so the warnings are noise here.
warnings.filterwarnings("ignore")


def write(name, obj):
    path = os.path.join(OUT, name)
    with open(path, "w") as f:
        json.dump(obj, f, separators=(",", ":"), allow_nan=False)
        f.write("\n")
    print(f"{path}: {os.path.getsize(path)} bytes")


def nan_to_none(v):
    v = float(v)
    return None if math.isnan(v) else v


# ---- entities ---------------------------------------------------------------------------------

def random_tag(rng, types, prev):
    """A tag that often continues prev, and often does what the schemes disagree on."""
    r = rng.random()
    if r < 0.40:
        return "O"
    if prev != "O" and r < 0.62:  # continue the previous entity
        return "I-" + prev[2:]
    if r < 0.80:
        return "B-" + rng.choice(types)
    return "I-" + rng.choice(types)  # I- after O or after another type: a stray I


def random_sentence(rng, types, n):
    tags, prev = [], "O"
    for _ in range(n):
        prev = random_tag(rng, types, prev)
        tags.append(prev)
    return tags


def perturb(rng, types, gold, rate):
    """Predictions: gold with some tags redrawn."""
    pred, prev = [], "O"
    for tag in gold:
        if rng.random() < rate:
            tag = random_tag(rng, types, prev)
        pred.append(tag)
        prev = tag
    return pred


def seqeval_figures(gold, pred, strict):
    kw = {"mode": "strict", "scheme": IOB2} if strict else {}
    report = classification_report(gold, pred, output_dict=True, **kw)
    out = {"types": {}}
    for name, row in report.items():
        # With no entity at all, the macro average is the mean of no scores: NaN, written null.
        fig = [nan_to_none(row["precision"]), nan_to_none(row["recall"]), nan_to_none(row["f1-score"]),
               int(row["support"])]
        key = {"micro avg": "micro", "macro avg": "macro", "weighted avg": "weighted"}.get(name)
        if key:
            out[key] = fig
        else:
            out["types"][name] = fig
    # f1_score (the function run_ner.py's metric calls) must agree with the report's micro F1.
    f1 = f1_score(gold, pred, **kw)
    assert f1 == out["micro"][2], (f1, out["micro"])
    out["accuracy"] = float(seq_accuracy(gold, pred))
    return out


def entity_cases():
    rng = random.Random(20240611)
    all_types = ["PER", "LOC", "ORG", "MISC"]
    cases = [
        # Hand-picked: the two modes differ on each of these.
        {"name": "stray I after O", "gold": [["O", "I-PER", "I-PER", "O"]], "pred": [["O", "B-PER", "I-PER", "O"]]},
        {"name": "type switch inside", "gold": [["B-PER", "I-LOC", "O"]], "pred": [["B-PER", "B-LOC", "O"]]},
        {"name": "sentence starts with I", "gold": [["I-ORG"], ["B-ORG", "I-ORG"]],
         "pred": [["I-ORG"], ["I-ORG", "I-ORG"]]},
        {"name": "no entity predicted", "gold": [["B-PER", "O"]], "pred": [["O", "O"]]},
        {"name": "only stray predictions", "gold": [["O", "O", "O"]], "pred": [["I-LOC", "O", "I-PER"]]},
    ]
    for c in range(36):
        types = all_types[: rng.randint(1, 4)]
        n_sent = 200 if c == 0 else rng.randint(1, 16)
        gold = [random_sentence(rng, types, rng.randint(0, 12)) for _ in range(n_sent)]
        if sum(map(len, gold)) == 0:
            gold.append(random_sentence(rng, types, 3))
        rate = rng.choice([0.0, 0.1, 0.3, 0.6])
        pred = [perturb(rng, types, s, rate) for s in gold]
        cases.append({"name": f"random {c}", "gold": gold, "pred": pred})
    out = []
    for case in cases:
        rec = {"name": case["name"],
               "gold": [" ".join(s) for s in case["gold"]],
               "pred": [" ".join(s) for s in case["pred"]],
               "conlleval": seqeval_figures(case["gold"], case["pred"], strict=False),
               "strict": seqeval_figures(case["gold"], case["pred"], strict=True)}
        out.append(rec)
    return out


# ---- multi-label ------------------------------------------------------------------------------

def multilabel_cases():
    rng = np.random.default_rng(7)
    out = []
    for c in range(30):
        k = int(rng.integers(1, 9))
        n = int(rng.integers(1, 41))
        threshold = [0.5, 0.5, 0.5, 0.3, 0.7][c % 5]
        density = rng.uniform(0.05, 0.6, size=k)
        density[rng.random(k) < 0.2] = 0  # some labels never true
        gold = (rng.random((n, k)) < density).astype(int)
        # Logits near the gold, with noise; 2 decimals, so some are exactly 0.
        logits = np.round((gold * 2 - 1) * rng.uniform(0, 2.5, size=(n, k)) + rng.normal(0, 1.2, size=(n, k)), 2)
        logits[rng.random((n, k)) < 0.05] = 0.0
        if c % 7 == 3:  # a label never predicted either
            logits[:, 0], gold[:, 0] = -1.0, 0
        probs = 1 / (1 + np.exp(-logits))
        pred = (probs > threshold).astype(int)
        # A single column reads as a binary target in scikit-learn, not as an indicator matrix:
        # labels=[1] makes its scores those of the one label.
        kw = {"labels": [1]} if k == 1 else {}
        p, r, f, s = precision_recall_fscore_support(gold, pred, average=None, **kw)
        assert len(p) == k, "scikit-learn dropped a label column"
        micro = precision_recall_fscore_support(gold, pred, average="micro", **kw)[:3]
        macro = precision_recall_fscore_support(gold, pred, average="macro", **kw)[:3]
        rows = [[float(v) for v in row] for row in logits]
        labels = [[int(j) for j in np.flatnonzero(row)] for row in gold]
        real = [True] * n
        if c % 3 == 1:  # padding rows the Go side must skip: ragged, labels out of range
            for pos in sorted(rng.integers(0, n + 1, size=3)):
                rows.insert(int(pos), [9.0] * (k + 1))
                labels.insert(int(pos), [k, -1, k])
                real.insert(int(pos), False)
        rec = {"k": k, "threshold": threshold, "logits": rows, "labels": labels,
               "per_label": [[float(p[j]), float(r[j]), float(f[j]), int(s[j])] for j in range(k)],
               "micro": [float(v) for v in micro], "macro": [float(v) for v in macro],
               "subset_accuracy": float(accuracy_score(gold, pred)), "count": n}
        if not all(real):
            rec["real"] = real
        out.append(rec)
    return out


# ---- regression -------------------------------------------------------------------------------

def regression_cases():
    rng = np.random.default_rng(11)
    vectors = []
    for c in range(30):
        n = int(rng.integers(2, 60))
        targets = rng.normal(0, 2, size=n)
        preds = 0.7 * targets + rng.normal(0, rng.uniform(0.1, 2), size=n)
        decimals = [0, 1, 2, 6][c % 4]  # few decimals: many ties
        vectors.append((np.round(preds, decimals), np.round(targets, decimals)))
    vectors.append((np.array([1.0, 2.0]), np.array([3.0, -1.0])))  # 2 examples: r = -1
    vectors.append((np.array([1.0, 2.0, 3.0, 4.0]), np.array([2.5, 2.5, 2.5, 2.5])))  # constant targets
    vectors.append((np.array([0.5, 0.5, 0.5]), np.array([1.0, 2.0, 2.0])))  # constant predictions
    vectors.append((np.array([3.0, 1.0, 2.0, 2.0, 5.0]), np.array([1e9, 1e9 + 1, 1e9 + 1, 1e9 + 3, 1e9 + 2])))
    out = []
    for c, (preds, targets) in enumerate(vectors):
        rec = {"preds": [float(v) for v in preds], "targets": [float(v) for v in targets],
               "mse": float(mean_squared_error(targets, preds)),
               "mae": float(mean_absolute_error(targets, preds)),
               "pearson": nan_to_none(scipy.stats.pearsonr(preds, targets).statistic),
               "spearman": nan_to_none(scipy.stats.spearmanr(preds, targets).statistic)}
        if c % 4 == 2:  # padding the Go side must skip: values that would change every figure
            n = len(preds)
            real = [True] * n
            for pos in sorted(rng.integers(0, n + 1, size=2)):
                rec["preds"].insert(int(pos), 1e300)
                rec["targets"].insert(int(pos), -1e300)
                real.insert(int(pos), False)
            rec["real"] = real
        out.append(rec)
    return out


def main():
    os.makedirs(OUT, exist_ok=True)
    write("entities.json", {"versions": VERSIONS, "cases": entity_cases()})
    write("multilabel.json", {"versions": VERSIONS, "cases": multilabel_cases()})
    write("regression.json", {"versions": VERSIONS, "cases": regression_cases()})


if __name__ == "__main__":
    main()

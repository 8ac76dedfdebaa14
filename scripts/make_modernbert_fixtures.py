#!/usr/bin/env python3
"""Write the parity fixtures of models/modernbert with transformers' ModernBERT.

Two tiny random ModernBertForSequenceClassification checkpoints are made by transformers
itself (its own initialisation, seeded) and saved with save_pretrained under
models/modernbert/testdata/:

  * tiny/       hidden 32, 4 heads, 3 layers (global every 3rd: layers 0 global, 1 and 2
                local), local_attention 8, intermediate 48, vocab 100, 128 positions, no
                biases (as answerdotai/ModernBERT-*), classifier_pooling "cls", float32;
  * tiny_bias/  the same shape with every bias on (attention, mlp, norm, classifier),
                classifier_pooling "mean", classifier_activation "gelu_pytorch_tanh", and
                global every 2nd layer, saved in bfloat16 (the references are computed from
                the bfloat16 weights widened to float32, as the Go side loads them).

models/modernbert/testdata/fixtures.json records, for each checkpoint, inputs and transformers'
outputs (eval mode, float32, attn_implementation="eager": plain matmul, additive mask,
softmax) as base64 little-endian float32:

  * "single": one sequence of 40 tokens, longer than the local window, no padding;
  * "batch": a padded batch of 4 rows of 40, 23, 9 and 1 real tokens;
  * for tiny/, the logits of the same weights with classifier_pooling "mean" too;
  * "train": 20 steps of plain SGD (lr 0.1, dropout 0 as configured) from tiny/ on two fixed
    labelled batches taken in turn, the mean cross-entropy of each step before its update.

Pinned version (asserted): transformers 5.25.0.

Usage (a venv with torch, transformers and safetensors, outside the repository):
    /work/venv-torch/bin/python scripts/make_modernbert_fixtures.py
"""

import base64
import json
import os
import shutil

import numpy as np
import torch
import transformers
from transformers import ModernBertConfig, ModernBertForSequenceClassification

TRANSFORMERS_VERSION = "5.25.0"
if transformers.__version__ != TRANSFORMERS_VERSION:
    raise SystemExit(f"transformers {transformers.__version__} found; this script is pinned to {TRANSFORMERS_VERSION}")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(REPO, "models", "modernbert", "testdata")
MAX_BYTES = 200 * 1024  # all checkpoints together

COMMON = dict(vocab_size=100, hidden_size=32, num_attention_heads=4, num_hidden_layers=3, local_attention=8,
              intermediate_size=48, max_position_embeddings=128, num_labels=3, pad_token_id=0, bos_token_id=1,
              eos_token_id=2, cls_token_id=1, sep_token_id=2,
              initializer_range=0.2)  # weights large enough for sharp attention: RoPE and the window show
MODELS = {
    "tiny": dict(COMMON, global_attn_every_n_layers=3, classifier_pooling="cls"),
    "tiny_bias": dict(COMMON, global_attn_every_n_layers=2, classifier_pooling="mean", attention_bias=True,
                      mlp_bias=True, norm_bias=True, classifier_bias=True,
                      classifier_activation="gelu_pytorch_tanh", global_rope_theta=20000.0, local_rope_theta=500.0),
}
SEQ_LEN = 40
LENGTHS = [40, 23, 9, 1]
TRAIN_STEPS = 20
TRAIN_LR = 0.1


def f32_b64(array):
    return base64.b64encode(np.ascontiguousarray(array, dtype="<f4").tobytes()).decode("ascii")


def make_inputs(rng, lengths, seq_len, pad):
    ids = rng.integers(3, COMMON["vocab_size"], size=(len(lengths), seq_len))
    mask = np.zeros_like(ids)
    for b, n in enumerate(lengths):
        ids[b, 0] = COMMON["cls_token_id"]
        ids[b, n:] = pad
        mask[b, :n] = 1
    return ids, mask


def run(model, ids, mask):
    with torch.no_grad():
        ids_t, mask_t = torch.tensor(ids), torch.tensor(mask)
        hidden = model.model(input_ids=ids_t, attention_mask=mask_t).last_hidden_state
        logits = model(input_ids=ids_t, attention_mask=mask_t).logits
    return dict(input_ids=ids.tolist(), attention_mask=mask.tolist(), hidden_shape=list(hidden.shape),
                last_hidden_state_f32_b64=f32_b64(hidden.numpy()), logits_shape=list(logits.shape),
                logits_f32_b64=f32_b64(logits.numpy()))


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(11)
    single = make_inputs(rng, [SEQ_LEN], SEQ_LEN, COMMON["pad_token_id"])
    batch = make_inputs(rng, LENGTHS, SEQ_LEN, COMMON["pad_token_id"])
    fixtures = dict(transformers_version=transformers.__version__, models={})
    total = 0
    for name, kwargs in MODELS.items():
        cfg = ModernBertConfig(**kwargs, attn_implementation="eager")
        model = ModernBertForSequenceClassification(cfg).eval()
        folder = os.path.join(OUT, name)
        shutil.rmtree(folder, ignore_errors=True)
        if name == "tiny_bias":
            model = model.to(torch.bfloat16)
        model.save_pretrained(folder)
        total += sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder))
        # The references come from the saved folder, read back as float32.
        model = ModernBertForSequenceClassification.from_pretrained(folder, dtype=torch.float32,
                                                                    attn_implementation="eager").eval()
        entry = dict(folder=name, single=run(model, *single), batch=run(model, *batch))
        if name == "tiny":
            model.config.classifier_pooling = "mean"
            entry["mean_single"] = run(model, *single)
            entry["mean_batch"] = run(model, *batch)
            model.config.classifier_pooling = "cls"
            entry["train"] = train(model, rng)
        fixtures["models"][name] = entry
    if total > MAX_BYTES:
        raise SystemExit(f"the checkpoints take {total} bytes, above {MAX_BYTES}")
    with open(os.path.join(OUT, "fixtures.json"), "w") as f:
        json.dump(fixtures, f, indent=1)
        f.write("\n")
    print(f"wrote {OUT}: checkpoints {total} bytes")


def train(model, rng):
    model.train()  # every dropout rate of the config is 0
    batches = []
    for lengths in ([16, 11, 5], [16, 16, 8]):
        ids, mask = make_inputs(rng, lengths, 16, COMMON["pad_token_id"])
        labels = rng.integers(0, COMMON["num_labels"], size=len(lengths))
        batches.append(dict(input_ids=ids.tolist(), attention_mask=mask.tolist(), labels=labels.tolist()))
    opt = torch.optim.SGD(model.parameters(), lr=TRAIN_LR)
    losses = []
    for step in range(TRAIN_STEPS):
        b = batches[step % len(batches)]
        out = model(input_ids=torch.tensor(b["input_ids"]), attention_mask=torch.tensor(b["attention_mask"]),
                    labels=torch.tensor(b["labels"]))
        opt.zero_grad()
        out.loss.backward()
        opt.step()
        losses.append(out.loss.item())
    model.eval()
    return dict(learning_rate=TRAIN_LR, batches=batches, losses=losses)


if __name__ == "__main__":
    main()

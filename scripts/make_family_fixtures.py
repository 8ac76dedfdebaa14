#!/usr/bin/env python3
"""Write the model parity fixtures of models/bert: one tiny checkpoint per family.

For BERT, RoBERTa, DistilBERT and ELECTRA this builds a tiny sequence classifier with
transformers (AutoModelForSequenceClassification.from_config), sets every weight from a
formula that the Go test computes too (so no weights are committed), saves it with
save_pretrained, and records in models/bert/testdata/family_<model_type>.json:

  * the config.json transformers wrote, and the names and shapes of the tensors in the
    model.safetensors it wrote (the Go side must name and shape them the same);
  * a padded batch of inputs, and the last hidden states and logits transformers computes
    from them (eval mode, float32, eager attention), as base64 little-endian float32;
  * TEXTS, with special and added tokens written in them, as the family's transformers
    tokenizer encodes them (padded and truncated to TEXT_LEN), and the logits of those ids.
    BERT, DistilBERT and ELECTRA read a vocab.txt of vocab_size tokens, [PAD] [UNK] [CLS]
    [SEP] [MASK] then "tok5", "tok6", ... (fixtureVocab in the Go test); RoBERTa reads the
    byte-level BPE of models/bert/testdata/roberta_bpe/tokenizer.json (written by
    scripts/make_tokenizer_fixtures.py, with added tokens), its vocab_size that tokenizer's
    length; its sha256 is recorded, so run this script again after that one. XLM-RoBERTa
    reads the SentencePiece Unigram tokenizer of tokenizers/testdata/xlmr/tokenizer.json
    (written by scripts/make_unigram_fixtures.py), in the same way.

The weight formula (weightValues in models/bert/family_parity_test.go): for a tensor named n
with N values, x = crc32(n) (or 1 when 0), then N times the xorshift32 step
x ^= x << 13; x ^= x >> 17; x ^= x << 5 (mod 2**32) and k = x % 2001 - 1000; a LayerNorm
weight is 1 + (0.1 * k) / 1000, a bias (0.1 * k) / 1000, any other tensor (0.2 * k) / 1000,
each computed in float64 and rounded to float32.

Pinned versions (asserted): transformers 5.25.0, tokenizers 0.23.3.

Usage (a venv with torch, transformers and safetensors, outside the repository):
    /work/venv-torch/bin/python scripts/make_family_fixtures.py
"""

import base64
import hashlib
import json
import os
import tempfile
import zlib

import numpy as np
import safetensors
import torch
import tokenizers
import transformers
from transformers import (AutoConfig, AutoModelForSequenceClassification, BertTokenizerFast, DistilBertTokenizerFast,
                          ElectraTokenizerFast, RobertaTokenizerFast, XLMRobertaTokenizerFast)

TRANSFORMERS_VERSION = "5.25.0"
TOKENIZERS_VERSION = "0.23.3"
if transformers.__version__ != TRANSFORMERS_VERSION or tokenizers.__version__ != TOKENIZERS_VERSION:
    raise SystemExit(f"transformers {transformers.__version__} and tokenizers {tokenizers.__version__} found; "
                     f"this script is pinned to {TRANSFORMERS_VERSION} and {TOKENIZERS_VERSION}")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(REPO, "models", "bert", "testdata")

COMMON = dict(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
              max_position_embeddings=40, hidden_act="gelu", num_labels=3, hidden_dropout_prob=0.1,
              attention_probs_dropout_prob=0.1, layer_norm_eps=1e-12)
CONFIGS = {
    "bert": dict(COMMON, type_vocab_size=2),
    "roberta": dict(COMMON, type_vocab_size=1, pad_token_id=1, bos_token_id=0, eos_token_id=2, layer_norm_eps=1e-5),
    "xlm-roberta": dict(COMMON, type_vocab_size=1, pad_token_id=1, bos_token_id=0, eos_token_id=2, layer_norm_eps=1e-5),
    "electra": dict(COMMON, type_vocab_size=2, embedding_size=16),
    "distilbert": dict(vocab_size=99, dim=32, n_layers=2, n_heads=4, hidden_dim=37, max_position_embeddings=40,
                       activation="gelu", num_labels=3, dropout=0.1, attention_dropout=0.1, seq_classif_dropout=0.2),
}
SEQ_LEN = 12
LENGTHS = [12, 7, 3]  # real tokens of each row; the rest is padding

BPE_TOKENIZER = "roberta_bpe/tokenizer.json"
TEXT_LEN = 16  # the texts are padded and truncated to this many tokens
WORDPIECE_TEXTS = [
    "tok7 [MASK] tok9 [SEP] tok12 tok98",
    "<s> </s> <pad> [CLS] [SEP] special-looking tokens in text",
    "[cls] TOK5 tok6[PAD]tok8 [UNK] [Mask]",
]
# XLM-RoBERTa's SentencePiece Unigram tokenizer, written by scripts/make_unigram_fixtures.py.
UNIGRAM_TOKENIZER = "../../../tokenizers/testdata/xlmr/tokenizer.json"
UNIGRAM_TEXTS = [
    "Привет, мир! a <mask> movie",
    "这部电影非常好看 café naïve 🎉",
    "<s> </s> <pad> مرحبا بالعالم   spaces",
]
BPE_TEXTS = [
    "<s> </s> <pad> [CLS] [SEP] special-looking tokens in text",
    "a charming <mask> movie , GoAccel hyperparam   sweep",
    "Paramount xGoAccel </s> the end",
]
TOKENIZER_CLASSES = {"bert": BertTokenizerFast, "distilbert": DistilBertTokenizerFast, "electra": ElectraTokenizerFast}


def xorshift_values(name, n):
    x = zlib.crc32(name.encode("utf-8")) or 1
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        x ^= (x << 13) & 0xFFFFFFFF
        x ^= x >> 17
        x ^= (x << 5) & 0xFFFFFFFF
        out[i] = x % 2001 - 1000
    return out


def weight_values(name, shape):
    k = xorshift_values(name, int(np.prod(shape)))
    if name.endswith(".bias"):
        v = (0.1 * k) / 1000.0
    elif name.endswith(".weight") and ("LayerNorm" in name or "layer_norm" in name):
        v = 1.0 + (0.1 * k) / 1000.0
    else:
        v = (0.2 * k) / 1000.0
    return v.astype(np.float32).reshape(shape)


def f32_b64(array):
    return base64.b64encode(np.ascontiguousarray(array, dtype="<f4").tobytes()).decode("ascii")


def inputs(cfg, model_type):
    rng = np.random.default_rng(7)
    pad = cfg.pad_token_id if cfg.pad_token_id is not None else 0
    ids = rng.integers(5, cfg.vocab_size, size=(len(LENGTHS), SEQ_LEN))
    mask = np.zeros_like(ids)
    types = np.zeros_like(ids)
    for b, n in enumerate(LENGTHS):
        ids[b, n:] = pad
        mask[b, :n] = 1
        if model_type in ("bert", "electra"):
            types[b, n // 2:n] = 1
    return ids, mask, types


def fixture_vocab(n):
    """The WordPiece vocabulary of the fixtures (fixtureVocab in the Go test)."""
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    return vocab + [f"tok{i}" for i in range(len(vocab), n)]


def text_inputs(model_type, vocab_size, folder):
    """The family's tokenizer (written into folder for WordPiece) and its encoding of the texts."""
    if model_type == "roberta":
        tok = RobertaTokenizerFast(tokenizer_file=os.path.join(OUT, BPE_TOKENIZER))
        texts = BPE_TEXTS
    elif model_type == "xlm-roberta":
        tok = XLMRobertaTokenizerFast(tokenizer_file=os.path.join(OUT, UNIGRAM_TOKENIZER))
        texts = UNIGRAM_TEXTS
    else:
        with open(os.path.join(folder, "vocab.txt"), "w") as f:
            f.write("\n".join(fixture_vocab(vocab_size)) + "\n")
        tok = TOKENIZER_CLASSES[model_type].from_pretrained(folder)
        texts = WORDPIECE_TEXTS
    if len(tok) != vocab_size:
        raise SystemExit(f"{model_type}: the tokenizer has {len(tok)} tokens, the model {vocab_size}")
    enc = tok(texts, padding="max_length", truncation=True, max_length=TEXT_LEN, return_token_type_ids=True,
              return_tensors="np")
    return texts, enc


def make(model_type, kwargs):
    if model_type == "roberta":
        kwargs = dict(kwargs, vocab_size=len(RobertaTokenizerFast(tokenizer_file=os.path.join(OUT, BPE_TOKENIZER))))
    if model_type == "xlm-roberta":
        kwargs = dict(kwargs, vocab_size=len(XLMRobertaTokenizerFast(tokenizer_file=os.path.join(OUT, UNIGRAM_TOKENIZER))))
    cfg = AutoConfig.for_model(model_type, **kwargs)
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_config(cfg, attn_implementation="eager")
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.from_numpy(weight_values(name, tuple(p.shape))))
    model.eval()
    with tempfile.TemporaryDirectory() as d:
        model.save_pretrained(d, safe_serialization=True)
        with open(os.path.join(d, "config.json")) as f:
            config_json = json.load(f)
        with safetensors.safe_open(os.path.join(d, "model.safetensors"), "np") as st:
            tensors = [[k, list(st.get_slice(k).get_shape())] for k in sorted(st.keys())]
        # What the Go side writes back must load: the same folder read by from_pretrained.
        back = AutoModelForSequenceClassification.from_pretrained(d, attn_implementation="eager").eval()
        texts, enc = text_inputs(model_type, cfg.vocab_size, d)
    ids, mask, types = inputs(cfg, model_type)
    feed = dict(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask))
    if model_type in ("bert", "electra"):
        feed["token_type_ids"] = torch.tensor(types)
    with torch.no_grad():
        out = model(**feed, output_hidden_states=True)
        again = back(**feed).logits
    if not torch.equal(out.logits, again):
        raise SystemExit(f"{model_type}: the saved folder does not give the same logits")
    hidden = out.hidden_states[-1].numpy()
    logits = out.logits.numpy()
    text_feed = dict(input_ids=torch.tensor(enc["input_ids"]), attention_mask=torch.tensor(enc["attention_mask"]))
    if model_type in ("bert", "electra"):
        text_feed["token_type_ids"] = torch.tensor(enc["token_type_ids"])
    with torch.no_grad():
        text_logits = model(**text_feed).logits.numpy()
    fixture = {
        "generator": "scripts/make_family_fixtures.py",
        "model_type": model_type,
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "config": config_json,
        "tensors": tensors,
        "input_ids": ids.tolist(),
        "attention_mask": mask.tolist(),
        "token_type_ids": types.tolist(),
        "hidden_shape": list(hidden.shape),
        "last_hidden_state_f32_b64": f32_b64(hidden),
        "logits_shape": list(logits.shape),
        "logits_f32_b64": f32_b64(logits),
        "texts": texts,
        "text_input_ids": enc["input_ids"].tolist(),
        "text_attention_mask": enc["attention_mask"].tolist(),
        "text_token_type_ids": enc["token_type_ids"].tolist(),
        "text_logits_f32_b64": f32_b64(text_logits),
    }
    fixture["train"] = train(model_type, kwargs, cfg.vocab_size, cfg.pad_token_id if cfg.pad_token_id is not None else 0)
    if model_type in ("roberta", "xlm-roberta"):
        tokenizer_file = BPE_TOKENIZER if model_type == "roberta" else UNIGRAM_TOKENIZER
        with open(os.path.join(OUT, tokenizer_file), "rb") as f:
            fixture["tokenizer"] = tokenizer_file
            fixture["tokenizer_sha256"] = hashlib.sha256(f.read()).hexdigest()
    path = os.path.join(OUT, f"family_{model_type}.json")
    with open(path, "w") as f:
        json.dump(fixture, f, indent=1)
        f.write("\n")
    print(f"wrote {path} ({os.path.getsize(path)} bytes): {type(model).__name__}, {len(tensors)} tensors, "
          f"logits {logits.shape}")


TRAIN_LR = 0.1
TRAIN_STEPS = 20
NO_DROPOUT = {"distilbert": dict(dropout=0.0, attention_dropout=0.0, seq_classif_dropout=0.0)}


def train(model_type, kwargs, vocab_size, pad):
    """20 steps of plain SGD from the fixture's weights with every dropout off, on two fixed
    labelled batches taken in turn: PyTorch's mean cross-entropy of each step before its
    update (familytest.TrainRun)."""
    off = NO_DROPOUT.get(model_type, dict(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, classifier_dropout=0.0))
    cfg = AutoConfig.for_model(model_type, **dict(kwargs, vocab_size=vocab_size, **off))
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_config(cfg, attn_implementation="eager")
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.from_numpy(weight_values(name, tuple(p.shape))))
    model.train()
    rng = np.random.default_rng(11)
    batches = []
    for lengths in ([12, 9, 4], [12, 12, 6]):
        ids = rng.integers(5, vocab_size, size=(len(lengths), SEQ_LEN))
        mask = np.zeros_like(ids)
        for b, n in enumerate(lengths):
            ids[b, n:] = pad
            mask[b, :n] = 1
        labels = rng.integers(0, kwargs["num_labels"], size=len(lengths))
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
    return dict(learning_rate=TRAIN_LR, batches=batches, losses=losses)


def main():
    for model_type, kwargs in CONFIGS.items():
        make(model_type, kwargs)


if __name__ == "__main__":
    main()

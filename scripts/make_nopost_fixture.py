#!/usr/bin/env python3
"""Write models/auto/testdata/ner_nopost/: a Unigram tokenizer.json with no post-processor
(post_processor null: no [CLS] or [SEP] is added, so every token of an encoding is a word of
the text) over the vocabulary of models/auto/testdata/ner_deberta's spm.model, and
ner_nopost.json: pipeline("token-classification") with each aggregation strategy on
make_ner_fixtures.TEXTS but the empty one (no token at all: transformers' model fails on it)
plus a text longer than max_len, run on ner_deberta's model with this
tokenizer. The test copies ner_deberta's config.json and model.safetensors next to the
tokenizer (the weights are not stored twice).

The tokenizer's normalizer is DeBERTa-v3's without its Precompiled step (Strip right, then runs
of spaces to one), its pre-tokenizer Metaspace, as in tokenizers/testdata/deberta.

Usage (a venv with torch, transformers 5.25.0, tokenizers 0.23.3, sentencepiece):
    python scripts/make_nopost_fixture.py
"""

import json
import os
import shutil
import sys
import tempfile
import warnings

import sentencepiece

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_ner_fixtures as nf  # noqa: E402  (TEXTS, MAX_LEN, ner(); asserts the versions)

OUT = os.path.join(nf.AUTO, "ner_nopost")
TEXTS = [t for t in nf.TEXTS if t] + ["a b c d e f g h i j k l m n o p q r s t u v w x y z " * 4]


def tokenizer_json():
    sp = sentencepiece.SentencePieceProcessor(model_file=os.path.join(nf.DEBERTA_DIR, "spm.model"))
    special = {sp.id_to_piece(i): i for i in range(sp.get_piece_size()) if sp.is_control(i) or sp.is_unknown(i)}
    vocab = [[sp.id_to_piece(i), 0.0 if sp.id_to_piece(i) in special else sp.get_score(i)]
             for i in range(sp.get_piece_size())]
    mask = sp.get_piece_size()  # [MASK] follows the vocabulary, as in DeBERTa-v3
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
              "special": True} for t, i in sorted(special.items(), key=lambda kv: kv[1])]
    added.append(dict(added[0], id=mask, content="[MASK]"))
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Strip", "strip_left": False, "strip_right": True},
            {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]},
        "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
        "post_processor": None,
        "decoder": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
        "model": {"type": "Unigram", "unk_id": sp.unk_id(), "vocab": vocab, "byte_fallback": False},
    }


def main():
    warnings.simplefilter("ignore")
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "tokenizer.json"), "w") as f:
        json.dump(tokenizer_json(), f, ensure_ascii=False)
    with open(os.path.join(OUT, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": nf.MAX_LEN, "unk_token": "[UNK]",
                   "pad_token": "[PAD]", "cls_token": "[CLS]", "sep_token": "[SEP]", "mask_token": "[MASK]"}, f)
    with tempfile.TemporaryDirectory() as folder:
        for name in ("config.json", "model.safetensors"):
            shutil.copy(os.path.join(nf.DEBERTA_DIR, name), folder)
        for name in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(os.path.join(OUT, name), folder)
        nf.TEXTS[:] = TEXTS
        results = nf.ner(folder)
    with open(os.path.join(nf.AUTO, "ner_nopost.json"), "w") as f:
        json.dump({"max_len": nf.MAX_LEN, "texts": TEXTS, "nopost": results}, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {OUT} and ner_nopost.json")


if __name__ == "__main__":
    main()

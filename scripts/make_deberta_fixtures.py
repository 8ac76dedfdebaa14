#!/usr/bin/env python3
"""Write the parity fixtures of models/deberta with transformers' DeBERTa-v2/v3.

A small SentencePiece Unigram model in DeBERTa-v3's layout ([PAD] [CLS] [SEP] [UNK] as pieces
0..3, VOCAB pieces, a small normalization rule table so that spm.model keeps a precompiled_charsmap
and stays a few KB) is trained on the rt-polarity sentences. Four tiny random DebertaV2ForSequenceClassification checkpoints are made
by transformers itself (its own initialisation, seeded) and saved with save_pretrained under
models/deberta/testdata/:

  * tiny/      DeBERTa-v3's layout: relative_attention, pos_att_type "p2c|c2p", share_att_key,
               norm_rel_ebd "layer_norm", position_biased_input false, type_vocab_size 0, with
               position_buckets 8 and max_position_embeddings 64 (so that a 40-token sequence
               reaches buckets 5 to 7), hidden 32, 4 heads, 3 layers, intermediate 37, 3 labels,
               every dropout 0, float32; with the spm.model and the tokenizer_config.json of a
               DeBERTa-v3 folder on the Hub (no tokenizer.json);
  * tiny_alt/  the keys v3 leaves at one value: share_att_key false (pos_key_proj,
               pos_query_proj), no buckets with max_relative_positions 16 (distances are
               clamped), position_biased_input, type_vocab_size 2, embedding_size 24
               (embed_proj), norm_rel_ebd "none", gelu_new and a tanh pooler, bfloat16;
  * tiny_v3/   tiny's layout with DeBERTa-v3's own position_buckets 256 and max_position_embeddings
               512: 512 rows of relative embeddings, of which a 40-token batch reads only the
               middle ones (models/deberta projects those rows alone), hidden 16, 2 heads, 2 layers,
               2 labels, bfloat16;
  * tiny_abs/  relative_attention false with pos_att_type ["c2p"] (which still widens the
               scaling, as in transformers) and norm_rel_ebd "layer_norm" (a LayerNorm that is
               there but unused), absolute positions, relu, bfloat16.

The bfloat16 references are computed from the saved weights widened to float32, as the Go side
loads them. models/deberta/testdata/fixtures.json records transformers' outputs (eval mode,
float32) as base64 little-endian float32:

  * for each checkpoint, "batch": a padded batch of 4 rows of 40, 23, 9 and 1 real tokens (with
    token type ids 0 then 1 in tiny_alt), last hidden state (padding positions included) and
    logits;
  * for tiny/, "single": one 40-token sequence without padding; "texts": texts tokenized by
    DebertaV2TokenizerFast from the tiny folder (padded to 48), and "tokenizer": its ids and
    type ids on texts and pairs with special tokens, accents, spaces and CJK;
  * "train": 20 steps of plain SGD (lr 0.1, dropout 0) from tiny/ on two fixed labelled batches
    taken in turn, the mean cross-entropy of each step before its update;
  * "buckets": transformers' make_log_bucket_position for DeBERTa-v3's (256, 512) and tiny's
    (8, 64) on every distance in a range wider than the table.

Pinned versions (asserted): transformers 5.25.0, tokenizers 0.23.3, sentencepiece 0.2.3;
transformers needs the protobuf package to read spm.model.

Usage (a venv with torch, transformers, sentencepiece, protobuf, outside the repository):
    /work/venv-torch/bin/python scripts/make_deberta_fixtures.py [DATA_DIR]
"""

import base64
import io
import json
import os
import shutil
import sys
import tempfile

import numpy as np
import sentencepiece as spm
import torch
import torch.nn.functional as F
import transformers
from transformers import DebertaV2Config, DebertaV2ForSequenceClassification, DebertaV2TokenizerFast
from transformers.models.deberta_v2 import modeling_deberta_v2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_tokenizer_fixtures as wp  # noqa: E402  (read_polarity; asserts transformers and tokenizers)

SENTENCEPIECE_VERSION = "0.2.3"
if spm.__version__ != SENTENCEPIECE_VERSION:
    raise SystemExit(f"sentencepiece {spm.__version__} found; this script is pinned to {SENTENCEPIECE_VERSION}")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, "..", "shared", "data", "rt-polarity")
OUT = os.path.join(REPO, "models", "deberta", "testdata")
MAX_FOLDER_BYTES = 300 * 1024  # each checkpoint folder
MAX_TOTAL_BYTES = 600 * 1024  # all of testdata
VOCAB = 400

COMMON = dict(hidden_size=32, num_attention_heads=4, intermediate_size=37, max_position_embeddings=64,
              pad_token_id=0, initializer_range=0.2)  # weights large enough for sharp attention
MODELS = {
    "tiny": dict(COMMON, num_hidden_layers=3, num_labels=3, relative_attention=True, position_buckets=8,
                 max_relative_positions=-1, pos_att_type="p2c|c2p", share_att_key=True, norm_rel_ebd="layer_norm",
                 position_biased_input=False, type_vocab_size=0, hidden_dropout_prob=0.0,
                 attention_probs_dropout_prob=0.0, pooler_dropout=0.0),
    "tiny_alt": dict(COMMON, num_hidden_layers=2, num_labels=2, relative_attention=True, position_buckets=-1,
                     max_relative_positions=16, pos_att_type=["c2p", "p2c"], share_att_key=False, norm_rel_ebd="none",
                     position_biased_input=True, type_vocab_size=2, embedding_size=24, hidden_act="gelu_new",
                     pooler_hidden_act="tanh", cls_dropout=0.0),
    "tiny_abs": dict(COMMON, num_hidden_layers=2, num_labels=3, relative_attention=False, pos_att_type=["c2p"],
                     norm_rel_ebd="layer_norm", position_biased_input=True, type_vocab_size=0, hidden_act="relu"),
    "tiny_v3": dict(COMMON, hidden_size=16, num_attention_heads=2, intermediate_size=19, max_position_embeddings=512, num_hidden_layers=2, num_labels=2, relative_attention=True,
                    position_buckets=256, max_relative_positions=-1, pos_att_type="p2c|c2p", share_att_key=True,
                    norm_rel_ebd="layer_norm", position_biased_input=False, type_vocab_size=0,
                    hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, pooler_dropout=0.0),
}
BF16 = {"tiny_alt", "tiny_abs", "tiny_v3"}
SEQ_LEN = 40
LENGTHS = [40, 23, 9, 1]
TEXT_LEN = 48
TRAIN_STEPS = 20
TRAIN_LR = 0.1

TEXTS = [
    "the movie is a charming , often hilarious ride .",
    "  two  spaces   and a tab\there ",
    "accents : café naïve Ångström , and [MASK] in the middle",
    "[CLS] already [SEP] has special tokens [PAD] [UNK]",
    "日本語 unseen letters ᚠᚢᚦ",
    "ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３ , the ﬁne ﬂow … ™ ½\u00a0and\u3000wide",
    "",
]
PAIRS = [("a good film .", "a bad one ."), ("[MASK] twice [MASK]", "  spaced   out  "), ("only a", "")]


def f32_b64(array):
    return base64.b64encode(np.ascontiguousarray(array, dtype="<f4").tobytes()).decode("ascii")


def normalization_rules():
    """A small SentencePiece normalization rule table (TSV of hex code points): fullwidth ASCII to
    ASCII, a few ligatures and symbols, and wide spaces to a space. Compiled into spm.model's
    precompiled_charsmap, it keeps the Precompiled normalizer in the pipeline at a few KB, where
    nmt_nfkc's table takes about 240 KB."""
    rules = [(f"{cp:X}", f"{cp - 0xFEE0:X}") for cp in range(0xFF01, 0xFF5F)]
    rules += [("FB01", "66 69"), ("FB02", "66 6C"), ("2026", "2E 2E 2E"), ("A0", "20"), ("3000", "20"),
              ("2122", "54 4D"), ("BD", "31 2044 32")]
    return "".join(f"{src}\t{dst}\n" for src, dst in rules)


def train_spm(texts):
    out = io.BytesIO()
    with tempfile.TemporaryDirectory() as d:
        tsv = os.path.join(d, "rules.tsv")
        with open(tsv, "w") as f:
            f.write(normalization_rules())
        spm.SentencePieceTrainer.train(sentence_iterator=iter(texts), model_writer=out, vocab_size=VOCAB,
                                       model_type="unigram", character_coverage=1.0, minloglevel=2, num_threads=1,
                                       normalization_rule_tsv=tsv, pad_id=0, bos_id=1, eos_id=2, unk_id=3,
                                       pad_piece="[PAD]", bos_piece="[CLS]", eos_piece="[SEP]", unk_piece="[UNK]")
    return out.getvalue()


def make_inputs(rng, vocab, lengths, seq_len, types=False):
    ids = rng.integers(4, vocab, size=(len(lengths), seq_len))
    mask = np.zeros_like(ids)
    type_ids = np.zeros_like(ids)
    for b, n in enumerate(lengths):
        ids[b, 0] = 1  # [CLS]
        ids[b, n:] = COMMON["pad_token_id"]
        mask[b, :n] = 1
        if types:
            type_ids[b, n // 2:n] = 1
    return ids, mask, type_ids


def run(model, ids, mask, type_ids):
    with torch.no_grad():
        kw = dict(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask), token_type_ids=torch.tensor(type_ids))
        hidden = model.deberta(**kw).last_hidden_state
        logits = model(**kw).logits
    return dict(input_ids=ids.tolist(), attention_mask=mask.tolist(), token_type_ids=type_ids.tolist(),
                hidden_shape=list(hidden.shape), last_hidden_state_f32_b64=f32_b64(hidden.numpy()),
                logits_shape=list(logits.shape), logits_f32_b64=f32_b64(logits.numpy()))


def tokenizer_cases(tok):
    cases = []
    for text in TEXTS:
        enc = tok(text, truncation=True, max_length=TEXT_LEN, return_token_type_ids=True)
        cases.append(dict(text=text, ids=enc["input_ids"], token_type_ids=enc["token_type_ids"]))
    pairs = []
    for a, b in PAIRS:
        enc = tok(a, b, truncation=True, max_length=TEXT_LEN, return_token_type_ids=True)
        pairs.append(dict(a=a, b=b, ids=enc["input_ids"], token_type_ids=enc["token_type_ids"]))
    return dict(tokenizer_class=type(tok).__name__, vocab_size=len(tok), max_len=TEXT_LEN, cases=cases, pair_cases=pairs)


def buckets():
    out = {}
    for bucket, max_pos, reach in ((256, 512, 1200), (8, 64, 200)):
        rel = torch.arange(-reach, reach + 1)
        b = modeling_deberta_v2.make_log_bucket_position(rel, bucket, max_pos).to(torch.long)
        out[f"{bucket}_{max_pos}"] = dict(position_buckets=bucket, max_position=max_pos, first=-reach,
                                          buckets=b.tolist())
    return out


def folder_bytes(folder):
    return sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder))


def main():
    texts = wp.read_polarity(DATA)
    print(f"{len(texts)} sentences from {DATA}")
    model_bytes = train_spm(texts)
    os.makedirs(OUT, exist_ok=True)
    tiny_dir = os.path.join(OUT, "tiny")
    shutil.rmtree(tiny_dir, ignore_errors=True)
    os.makedirs(tiny_dir)
    with open(os.path.join(tiny_dir, "spm.model"), "wb") as f:
        f.write(model_bytes)
    with open(os.path.join(tiny_dir, "tokenizer_config.json"), "w") as f:  # as microsoft/deberta-v3-base's
        json.dump({"do_lower_case": False, "vocab_type": "spm"}, f)
        f.write("\n")
    tok = DebertaV2TokenizerFast.from_pretrained(tiny_dir)
    vocab = len(tok)
    print(f"spm.model: {len(model_bytes)} bytes, {vocab} tokens with [MASK]")

    torch.manual_seed(0)
    rng = np.random.default_rng(7)
    fixtures = dict(generator="scripts/make_deberta_fixtures.py", transformers_version=transformers.__version__,
                    torch_version=torch.__version__, models={}, buckets=buckets())
    for name, kwargs in MODELS.items():
        cfg = DebertaV2Config(vocab_size=vocab, **kwargs)
        model = DebertaV2ForSequenceClassification(cfg).eval()
        folder = os.path.join(OUT, name)
        if name != "tiny":
            shutil.rmtree(folder, ignore_errors=True)
        if name in BF16:
            model = model.to(torch.bfloat16)
        model.save_pretrained(folder)
        size = folder_bytes(folder)
        print(f"wrote {folder}: {sorted(os.listdir(folder))}, {size} bytes")
        if size > MAX_FOLDER_BYTES:
            raise SystemExit(f"{folder} takes {size} bytes, above {MAX_FOLDER_BYTES}")
        # The references come from the saved folder, read back as float32.
        model = DebertaV2ForSequenceClassification.from_pretrained(folder, dtype=torch.float32).eval()
        entry = dict(folder=name, batch=run(model, *make_inputs(rng, vocab, LENGTHS, SEQ_LEN, types=name == "tiny_alt")))
        if name == "tiny":
            entry["single"] = run(model, *make_inputs(rng, vocab, [SEQ_LEN], SEQ_LEN))
            enc = tok(TEXTS, padding="max_length", truncation=True, max_length=TEXT_LEN, return_token_type_ids=True)
            entry["texts"] = dict(texts=TEXTS, **run(model, np.array(enc["input_ids"]), np.array(enc["attention_mask"]),
                                                     np.array(enc["token_type_ids"])))
            entry["tokenizer"] = tokenizer_cases(tok)
            entry["train"] = train(model, rng, vocab)
        fixtures["models"][name] = entry
    path = os.path.join(OUT, "fixtures.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(fixtures, f, ensure_ascii=False, indent=1)
        f.write("\n")
    total = sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(OUT) for f in files)
    print(f"wrote {path} ({os.path.getsize(path)} bytes); testdata {total} bytes")
    if total > MAX_TOTAL_BYTES:
        raise SystemExit(f"testdata takes {total} bytes, above {MAX_TOTAL_BYTES}")


def train(model, rng, vocab):
    model.train()  # every dropout rate of tiny's config is 0
    batches = []
    for lengths in ([16, 11, 5], [16, 16, 8]):
        ids, mask, _ = make_inputs(rng, vocab, lengths, 16)
        labels = rng.integers(0, model.config.num_labels, size=len(lengths))
        batches.append(dict(input_ids=ids.tolist(), attention_mask=mask.tolist(), labels=labels.tolist()))
    opt = torch.optim.SGD(model.parameters(), lr=TRAIN_LR)
    losses = []
    for step in range(TRAIN_STEPS):
        b = batches[step % len(batches)]
        logits = model(input_ids=torch.tensor(b["input_ids"]), attention_mask=torch.tensor(b["attention_mask"])).logits
        loss = F.cross_entropy(logits, torch.tensor(b["labels"]))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    model.eval()
    return dict(learning_rate=TRAIN_LR, batches=batches, losses=losses)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Write the random checkpoints of the end-to-end fine-tuning table (docs/endtoend.md).

There are no pretrained ModernBERT, DeBERTa-v3 or XLM-RoBERTa weights on the development
machine (no Hub downloads), so this script has transformers write a RANDOM checkpoint of each
family at MiniLM's size (6 layers, hidden 384, 12 heads, feed-forward 1536; 2 labels), each
with a tokenizer of its family's kind trained on the TRAIN part of a split written by
scripts/write_split.go (the test part is never seen), about VOCAB entries:

  * modernbert/   ModernBertForSequenceClassification: global attention every 3rd layer, the
                  others a 128-token window, RoPE thetas 160000 (global) / 10000 (local), no
                  biases, GeGLU with intermediate_size 1024 (3 x 384 x 1024 weights per layer,
                  as BERT's 2 x 384 x 1536), mean pooling and every dropout 0 as
                  answerdotai/ModernBERT-base; a byte-level BPE tokenizer.json (NFC,
                  GPT-2's pattern, [CLS] $A [SEP] by BertProcessing: see
                  modernbert_tokenizer), model_input_names without token types;
  * deberta-v3/   DebertaV2ForSequenceClassification in DeBERTa-v3's layout: relative attention
                  "p2c|c2p", position_buckets 256, max_relative_positions -1, share_att_key,
                  norm_rel_ebd "layer_norm", no absolute positions, type_vocab_size 0, layer
                  norm eps 1e-7, dropout 0.1; a SentencePiece Unigram spm.model ([PAD] [CLS]
                  [SEP] [UNK] as pieces 0..3, nmt_nfkc) and the tokenizer_config.json of a
                  microsoft/deberta-v3-* folder, no tokenizer.json;
  * xlm-roberta/  XLMRobertaForSequenceClassification (RoBERTa's encoder: 514 positions, one
                  token type, pad id 1, dropout 0.1); a SentencePiece Unigram model (<unk> <s>
                  </s> as pieces 0..2, nmt_nfkc) converted by XLMRobertaTokenizerFast and saved
                  with save_pretrained (tokenizer.json; transformers 5 writes no .model file).

Each folder is written with save_pretrained in float32. Both frameworks start from the same
weights; the classification head is in the checkpoint (transformers initialises it here), so
the head too is shared. The folders are large (about 45 MB each): write them OUTSIDE the
repository.

Pinned versions (asserted): transformers 5.25.0, tokenizers 0.23.3, sentencepiece 0.2.3.

Usage:
    go run scripts/write_split.go --data_dir ../shared/data/rt-polarity --seed 7 --out /tmp/split-7
    /work/venv-torch/bin/python scripts/make_e2e_models.py --split /tmp/split-7 --out /work/e2e-models
"""

import argparse
import io
import json
import os
import shutil
import tempfile

import sentencepiece as spm
import tokenizers
import torch
import transformers
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import (DebertaV2Config, DebertaV2ForSequenceClassification, DebertaV2TokenizerFast,
                          ModernBertConfig, ModernBertForSequenceClassification, PreTrainedTokenizerFast,
                          XLMRobertaConfig, XLMRobertaForSequenceClassification, XLMRobertaTokenizerFast)

VERSIONS = {"transformers": (transformers.__version__, "5.25.0"), "tokenizers": (tokenizers.__version__, "0.23.3"),
            "sentencepiece": (spm.__version__, "0.2.3")}
for name, (found, pinned) in VERSIONS.items():
    if found != pinned:
        raise SystemExit(f"{name} {found} found; this script is pinned to {pinned}")

VOCAB = 8000
SIZE = dict(num_hidden_layers=6, hidden_size=384, num_attention_heads=12, num_labels=2, initializer_range=0.02)
MINILM_FFN = 1536
MODERNBERT_FFN = 2 * MINILM_FFN // 3  # GeGLU's Wi is 384 x 2I and Wo I x 384: 3 x 384 x I = 2 x 384 x 1536


def read_texts(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]


def train_spm(texts, **kw):
    """A SentencePiece Unigram model (bytes) with SentencePiece's default nmt_nfkc normalisation."""
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(texts), model_writer=out, vocab_size=VOCAB,
                                   model_type="unigram", character_coverage=1.0, minloglevel=2, num_threads=2,
                                   **kw)
    return out.getvalue()


def modernbert_tokenizer(texts, folder):
    specials = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]
    tok = Tokenizer(models.BPE(unk_token=None, fuse_unk=False, byte_fallback=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=specials, min_frequency=2,
                                                       initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                                       show_progress=False))
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    # answerdotai/ModernBERT-base's file has TemplateProcessing "[CLS]:0 $A:0 [SEP]:0", which
    # models/bert's BPE reader refuses today (RobertaProcessing and BertProcessing only);
    # BertProcessing gives the same ids and attention mask for one text.
    tok.post_processor = processors.BertProcessing(("[SEP]", sep), ("[CLS]", cls))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]",
                                   pad_token="[PAD]", mask_token="[MASK]", model_max_length=8192,
                                   model_input_names=["input_ids", "attention_mask"])
    fast.save_pretrained(folder)
    return PreTrainedTokenizerFast.from_pretrained(folder)


def deberta_tokenizer(texts, folder):
    model = train_spm(texts, pad_id=0, bos_id=1, eos_id=2, unk_id=3,
                      pad_piece="[PAD]", bos_piece="[CLS]", eos_piece="[SEP]", unk_piece="[UNK]")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "spm.model"), "wb") as f:
        f.write(model)
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:  # as microsoft/deberta-v3-base's
        json.dump({"do_lower_case": False, "vocab_type": "spm"}, f)
        f.write("\n")
    return DebertaV2TokenizerFast.from_pretrained(folder)


def xlmr_tokenizer(texts, folder):
    model = train_spm(texts)
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "sentencepiece.bpe.model"), "wb") as f:
            f.write(model)
        tok = XLMRobertaTokenizerFast.from_pretrained(d)
        tok.save_pretrained(folder)
    return XLMRobertaTokenizerFast.from_pretrained(folder)


def modernbert(tok):
    return ModernBertForSequenceClassification(ModernBertConfig(
        **SIZE, vocab_size=len(tok), intermediate_size=MODERNBERT_FFN, global_attn_every_n_layers=3,
        local_attention=128, global_rope_theta=160000.0, local_rope_theta=10000.0, max_position_embeddings=8192,
        classifier_pooling="mean", pad_token_id=tok.pad_token_id, cls_token_id=tok.cls_token_id,
        sep_token_id=tok.sep_token_id, bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id))


def deberta(tok):
    return DebertaV2ForSequenceClassification(DebertaV2Config(
        **SIZE, vocab_size=len(tok), intermediate_size=MINILM_FFN, relative_attention=True, position_buckets=256,
        max_relative_positions=-1, pos_att_type="p2c|c2p", share_att_key=True, norm_rel_ebd="layer_norm",
        position_biased_input=False, max_position_embeddings=512, type_vocab_size=0, layer_norm_eps=1e-7,
        hidden_act="gelu", pooler_hidden_size=SIZE["hidden_size"], pooler_dropout=0.0, pooler_hidden_act="gelu",
        hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1, pad_token_id=tok.pad_token_id))


def xlmr(tok):
    return XLMRobertaForSequenceClassification(XLMRobertaConfig(
        **SIZE, vocab_size=len(tok), intermediate_size=MINILM_FFN, max_position_embeddings=514, type_vocab_size=1,
        layer_norm_eps=1e-5, pad_token_id=tok.pad_token_id, bos_token_id=tok.cls_token_id,
        eos_token_id=tok.sep_token_id))


FAMILIES = {"modernbert": (modernbert_tokenizer, modernbert), "deberta-v3": (deberta_tokenizer, deberta),
            "xlm-roberta": (xlmr_tokenizer, xlmr)}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--split", required=True, help="folder with train.jsonl (scripts/write_split.go): the tokenizers' text")
    p.add_argument("--out", required=True, help="folder to write one sub-folder per family into (outside the repository)")
    p.add_argument("--seed", type=int, default=0, help="torch.manual_seed before each model is initialised")
    args = p.parse_args()
    repo = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    out = os.path.realpath(args.out)
    if out == repo or out.startswith(repo + os.sep):
        raise SystemExit(f"make_e2e_models: --out {args.out} is inside the repository; the weights are ~45 MB each")
    texts = read_texts(os.path.join(args.split, "train.jsonl"))
    print(f"{len(texts)} training sentences from {args.split}/train.jsonl")
    for name, (make_tok, make_model) in FAMILIES.items():
        folder = os.path.join(out, name)
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        tok = make_tok(texts, folder)
        torch.manual_seed(args.seed)
        model = make_model(tok)
        model.save_pretrained(folder)
        params = sum(t.numel() for t in model.parameters())
        enc = tok(texts[:1000], truncation=True, max_length=64)
        tokens = sum(len(ids) for ids in enc["input_ids"]) / 1000
        print(f"{folder}: {type(model).__name__}, {params / 1e6:.2f}M parameters "
              f"({params - model.get_input_embeddings().weight.numel():,} outside the token embeddings), "
              f"{type(tok).__name__} with {len(tok)} tokens, {tokens:.1f} tokens per sentence; "
              f"files: {', '.join(sorted(os.listdir(folder)))}")


if __name__ == "__main__":
    main()

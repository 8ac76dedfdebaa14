#!/usr/bin/env python3
"""Write the token-classification parity fixtures (transformers' *ForTokenClassification).

models/bert/testdata/token_fixtures.json: for BERT, RoBERTa, XLM-RoBERTa, DistilBERT and
ELECTRA, a tiny token classifier built by transformers (AutoModelForTokenClassification
.from_config) with the shapes of scripts/make_family_fixtures.py and num_labels 5, its weights
set from that script's formula (weight_values; the Go test computes them too, so no weights are
committed), saved with save_pretrained; recorded per family: the config.json transformers wrote,
the names and shapes of its model.safetensors, a padded batch (the family fixtures' inputs) and
the per-token logits [3, 12, 5] of that batch.

models/modernbert/testdata/token_fixtures.json and models/deberta/testdata/token_fixtures.json:
the committed sequence-classifier checkpoints of those packages (modernbert: tiny, tiny_bias;
deberta: tiny, tiny_alt) read by ModernBertForTokenClassification and
DebertaV2ForTokenClassification, which take every tensor they have from them (the script checks
that none is missing; DeBERTa's pooler is left over) and saved again with save_pretrained;
recorded per checkpoint: the config.json transformers wrote, the names and shapes of the saved
tensors (each one equal to the source's, checked, so the Go test rebuilds the folder from the
committed one without new weights), the padded batch of the package's fixtures.json and the
per-token logits of it.

Everything runs in eval mode, float32, eager attention; the arrays are base64 little-endian
float32.

Pinned version (asserted): transformers 5.25.0.

Usage (a venv with torch, transformers, sentencepiece and safetensors, outside the repository):
    /work/venv-torch/bin/python scripts/make_token_fixtures.py
"""

import hashlib
import json
import os
import sys
import tempfile

import numpy as np
import safetensors
import torch
import transformers
from transformers import (AutoConfig, AutoModelForTokenClassification, DebertaV2ForTokenClassification,
                          ModernBertForTokenClassification, RobertaTokenizerFast, XLMRobertaTokenizerFast)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_family_fixtures as fam  # noqa: E402  (the family configs, formula, inputs; asserts the versions)

TRANSFORMERS_VERSION = "5.25.0"
if transformers.__version__ != TRANSFORMERS_VERSION:
    raise SystemExit(f"transformers {transformers.__version__} found; this script is pinned to {TRANSFORMERS_VERSION}")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NUM_LABELS = 5
MAX_BYTES = 60 * 1024  # each fixture file


def saved(model):
    """save_pretrained's config.json and tensor list of model, and its tensors."""
    with tempfile.TemporaryDirectory() as d:
        model.save_pretrained(d, safe_serialization=True)
        with open(os.path.join(d, "config.json")) as f:
            config_json = json.load(f)
        with safetensors.safe_open(os.path.join(d, "model.safetensors"), "pt") as st:
            tensors = {k: st.get_tensor(k) for k in st.keys()}
    return config_json, tensors


def token_logits(model, feed):
    with torch.no_grad():
        logits = model(**{k: torch.tensor(v) for k, v in feed.items()}).logits
    return logits.numpy()


def write(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    size = os.path.getsize(path)
    print(f"wrote {path} ({size} bytes)")
    if size > MAX_BYTES:
        raise SystemExit(f"{path} takes {size} bytes, above {MAX_BYTES}")


def bert_family():
    out = dict(generator="scripts/make_token_fixtures.py", transformers_version=transformers.__version__,
               torch_version=torch.__version__, families={})
    for model_type, kwargs in fam.CONFIGS.items():
        kwargs = dict(kwargs, num_labels=NUM_LABELS)
        entry = {}
        if model_type == "roberta":
            kwargs["vocab_size"] = len(RobertaTokenizerFast(tokenizer_file=os.path.join(fam.OUT, fam.BPE_TOKENIZER)))
            entry["tokenizer"] = fam.BPE_TOKENIZER
        if model_type == "xlm-roberta":
            kwargs["vocab_size"] = len(XLMRobertaTokenizerFast(tokenizer_file=os.path.join(fam.OUT, fam.UNIGRAM_TOKENIZER)))
            entry["tokenizer"] = fam.UNIGRAM_TOKENIZER
        if "tokenizer" in entry:
            with open(os.path.join(fam.OUT, entry["tokenizer"]), "rb") as f:
                entry["tokenizer_sha256"] = hashlib.sha256(f.read()).hexdigest()
        cfg = AutoConfig.for_model(model_type, **kwargs)
        torch.manual_seed(0)
        model = AutoModelForTokenClassification.from_config(cfg, attn_implementation="eager")
        with torch.no_grad():
            for name, p in model.named_parameters():
                p.copy_(torch.from_numpy(fam.weight_values(name, tuple(p.shape))))
        model.eval()
        config_json, tensors = saved(model)
        if any(".pooler." in k for k in tensors):
            raise SystemExit(f"{model_type}: the token classifier has a pooler: {sorted(tensors)}")
        ids, mask, types = fam.inputs(cfg, model_type)
        feed = dict(input_ids=ids, attention_mask=mask)
        if model_type in ("bert", "electra"):
            feed["token_type_ids"] = types
        logits = token_logits(model, feed)
        entry.update(model_type=model_type, transformers_version=transformers.__version__,
                     model_class=type(model).__name__, config=config_json,
                     tensors=[[k, list(tensors[k].shape)] for k in sorted(tensors)],
                     input_ids=ids.tolist(), attention_mask=mask.tolist(), token_type_ids=types.tolist(),
                     logits_shape=list(logits.shape), logits_f32_b64=fam.f32_b64(logits))
        out["families"][model_type] = entry
        print(f"{model_type}: {type(model).__name__}, {len(tensors)} tensors, logits {logits.shape}")
    write(os.path.join(REPO, "models", "bert", "testdata", "token_fixtures.json"), out)


def from_checkpoints(package, cls, names):
    """The committed sequence checkpoints of package read as token classifiers by cls."""
    testdata = os.path.join(REPO, "models", package, "testdata")
    with open(os.path.join(testdata, "fixtures.json")) as f:
        seq = json.load(f)
    out = dict(generator="scripts/make_token_fixtures.py", transformers_version=transformers.__version__,
               torch_version=torch.__version__, models={})
    for name in names:
        folder = os.path.join(testdata, name)
        model, info = cls.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager",
                                          output_loading_info=True)
        if info["missing_keys"] or info["mismatched_keys"]:
            raise SystemExit(f"{package}/{name}: {cls.__name__} misses tensors of the checkpoint: {info}")
        model.eval()
        config_json, tensors = saved(model)
        with safetensors.safe_open(os.path.join(folder, "model.safetensors"), "pt") as st:
            for k, v in tensors.items():
                if not torch.equal(st.get_tensor(k).to(torch.float32), v):
                    raise SystemExit(f"{package}/{name}: the saved {k} differs from the checkpoint's")
        batch = seq["models"][name]["batch"]
        feed = dict(input_ids=np.array(batch["input_ids"]), attention_mask=np.array(batch["attention_mask"]))
        if batch.get("token_type_ids") is not None:
            feed["token_type_ids"] = np.array(batch["token_type_ids"])
        logits = token_logits(model, feed)
        out["models"][name] = dict(folder=name, model_class=type(model).__name__, config=config_json,
                                   unexpected=sorted(info["unexpected_keys"]),
                                   tensors=[[k, list(tensors[k].shape)] for k in sorted(tensors)],
                                   input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                                   token_type_ids=batch.get("token_type_ids"),
                                   logits_shape=list(logits.shape), logits_f32_b64=fam.f32_b64(logits))
        print(f"{package}/{name}: {type(model).__name__}, {len(tensors)} tensors (left over: "
              f"{sorted(info['unexpected_keys'])}), logits {logits.shape}")
    write(os.path.join(testdata, "token_fixtures.json"), out)


def main():
    bert_family()
    from_checkpoints("modernbert", ModernBertForTokenClassification, ["tiny", "tiny_bias"])
    from_checkpoints("deberta", DebertaV2ForTokenClassification, ["tiny", "tiny_alt"])


if __name__ == "__main__":
    main()

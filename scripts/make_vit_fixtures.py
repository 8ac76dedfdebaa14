#!/usr/bin/env python3
"""Write the parity fixtures of models/vit with transformers' ViTForImageClassification.

Two tiny random ViTForImageClassification checkpoints are made by transformers itself (its own
initialisation, seeded, at initializer_range 0.2 so that attention is far from uniform, and
every LayerNorm's weight and bias moved off 1 and 0 so that a swapped norm shows) and saved
with save_pretrained, each with a ViTImageProcessor's preprocessor_config.json, under
models/vit/testdata/:

  * tiny/      hidden 32, 4 heads, 2 layers, intermediate 37, image 32, patch 8 (16 patches),
               qkv_bias, gelu, layer_norm_eps 1e-12, 3 unnamed labels;
  * tiny_alt/  no qkv_bias, gelu_pytorch_tanh, layer_norm_eps 1e-6, image 24, patch 4
               (36 patches), labels "cat" and "dog", problem_type multi_label_classification;
  * dinov2/    Dinov2ForImageClassification: hidden 32, 4 heads, 2 layers, mlp_ratio 2, image 28,
               patch 7, layerscale_value 0.5 (layer scales and norms moved off their start),
               with a BitImageProcessor;
  * dinov2_swiglu/  the SwiGLU feed-forward (mlp_ratio 4: 88 wide), no qkv_bias,
               gelu_pytorch_tanh, 2 labels.

models/vit/testdata/fixtures.json records, for each checkpoint, inputs and transformers' outputs
(eval mode, float32, attn_implementation="eager") as base64 little-endian float32; the pixels
are written NHWC ([B, H, W, 3], goaccel's layout) and given to transformers as NCHW:

  * "native": a batch at the checkpoint's image size;
  * "interp_*": with interpolate_pos_encoding=True at other sizes: larger (48, 36), smaller
    (16), not square (40x24), and not a multiple of the patch (44: the last 4 pixels of each
    side fall outside every patch);
  * "train" (tiny, dinov2_swiglu): 20 steps of plain SGD (lr 0.1, dropout 0 as configured) on two fixed
    labelled batches of 4 images (dinov2_swiglu: 2) taken in turn, the mean cross-entropy of each step before its
    update.

Pinned version (asserted): transformers 5.25.0.

Usage (a venv with torch, transformers and safetensors, outside the repository):
    $GOACCEL_TORCH_PYTHON scripts/make_vit_fixtures.py
"""

import base64
import json
import os
import shutil

import numpy as np
import torch
import transformers
from transformers import (BitImageProcessor, Dinov2Config, Dinov2ForImageClassification, ViTConfig,
                          ViTForImageClassification, ViTImageProcessor)

TRANSFORMERS_VERSION = "5.25.0"
if transformers.__version__ != TRANSFORMERS_VERSION:
    raise SystemExit(f"transformers {transformers.__version__} found; this script is pinned to {TRANSFORMERS_VERSION}")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(REPO, "models", "vit", "testdata")
MAX_BYTES = 990_000  # all of testdata together (fixtures under 1 MB are committed)

MODELS = {
    "tiny": dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37, image_size=32,
                 patch_size=8, num_labels=3, initializer_range=0.2),
    "tiny_alt": dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37, image_size=24,
                     patch_size=4, qkv_bias=False, hidden_act="gelu_pytorch_tanh", layer_norm_eps=1e-6,
                     id2label={0: "cat", 1: "dog"}, label2id={"cat": 0, "dog": 1},
                     problem_type="multi_label_classification", initializer_range=0.2),
    "dinov2": dict(model_type="dinov2", hidden_size=32, num_hidden_layers=2, num_attention_heads=4, mlp_ratio=2,
                   image_size=28, patch_size=7, num_labels=3, layerscale_value=0.5, initializer_range=0.2),
    "dinov2_swiglu": dict(model_type="dinov2", hidden_size=32, num_hidden_layers=2, num_attention_heads=4, mlp_ratio=4,
                          image_size=28, patch_size=7, num_labels=2, use_swiglu_ffn=True, qkv_bias=False,
                          hidden_act="gelu_pytorch_tanh", initializer_range=0.2),
}
# Each checkpoint's inputs: name -> (batch, height, width, interpolate_pos_encoding).
RUNS = {
    "tiny": {"native": (2, 32, 32, False), "interp_48": (2, 48, 48, True), "interp_16": (1, 16, 16, True),
             "interp_40x24": (1, 40, 24, True), "interp_44": (1, 44, 44, True)},
    "tiny_alt": {"native": (3, 24, 24, False), "interp_36": (2, 36, 36, True)},
    # DINOv2 always interpolates (another size than image_size is its normal use).
    "dinov2": {"native": (2, 28, 28, True), "interp_42x35": (1, 42, 35, True)},
    "dinov2_swiglu": {"native": (2, 28, 28, True), "interp_21": (1, 21, 21, True)},
}
STEPS, LR, TRAIN_BATCH = 20, 0.1, 4


def b64(array):
    return base64.b64encode(np.ascontiguousarray(array, dtype="<f4").tobytes()).decode("ascii")


def make(name, keys, seed):
    torch.manual_seed(seed)
    keys = dict(keys)
    dinov2 = keys.pop("model_type", "vit") == "dinov2"
    config = Dinov2Config(**keys) if dinov2 else ViTConfig(**keys)
    config._attn_implementation = "eager"
    model = (Dinov2ForImageClassification if dinov2 else ViTForImageClassification)(config).eval()
    with torch.no_grad():
        for pname, p in model.named_parameters():
            if "norm" in pname or "layer_scale" in pname:
                p.add_(0.3 * torch.randn_like(p))
    folder = os.path.join(OUT, name)
    shutil.rmtree(folder, ignore_errors=True)
    model.save_pretrained(folder)
    side = keys["image_size"]
    if dinov2:
        BitImageProcessor(size={"shortest_edge": side}, crop_size={"height": side, "width": side}).save_pretrained(folder)
    else:
        ViTImageProcessor(size={"height": side, "width": side}).save_pretrained(folder)
    return model, folder


def run(model, batch, height, width, interpolate, gen):
    pixels = torch.randn(batch, height, width, 3, generator=gen)  # NHWC
    with torch.no_grad():
        x = pixels.permute(0, 3, 1, 2).contiguous()
        if isinstance(model, Dinov2ForImageClassification):
            out, hidden = model(pixel_values=x), model.dinov2(pixel_values=x).last_hidden_state
        else:
            out = model(pixel_values=x, interpolate_pos_encoding=interpolate)
            hidden = model.vit(pixel_values=x, interpolate_pos_encoding=interpolate).last_hidden_state
    return {"pixels_shape": list(pixels.shape), "pixels_f32_b64": b64(pixels.numpy()),
            "interpolate_pos_encoding": interpolate,
            "hidden_shape": list(hidden.shape), "last_hidden_state_f32_b64": b64(hidden.numpy()),
            "logits_shape": list(out.logits.shape), "logits_f32_b64": b64(out.logits.numpy())}


def train(name, model, gen, size):
    side = model.config.image_size
    batches = []
    for _ in range(2):
        pixels = torch.randn(size, side, side, 3, generator=gen)
        labels = torch.randint(0, model.config.num_labels, (size,), generator=gen)
        batches.append((pixels, labels))
    model = type(model).from_pretrained(os.path.join(OUT, name), attn_implementation="eager").train()
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    losses = []
    for step in range(STEPS):
        pixels, labels = batches[step % 2]
        logits = model(pixel_values=pixels.permute(0, 3, 1, 2).contiguous()).logits
        loss = torch.nn.functional.cross_entropy(logits, labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return {"learning_rate": LR, "losses": losses,
            "batches": [{"pixels_shape": list(p.shape), "pixels_f32_b64": b64(p.numpy()), "labels": l.tolist()}
                        for p, l in batches]}


def main():
    os.makedirs(OUT, exist_ok=True)
    doc = {"transformers_version": transformers.__version__, "models": {}}
    for i, (name, keys) in enumerate(MODELS.items()):
        model, folder = make(name, keys, seed=100 + i)
        gen = torch.Generator().manual_seed(200 + i)
        entry = {"folder": name, "runs": {r: run(model, *spec, gen) for r, spec in RUNS[name].items()}}
        if name in ("tiny", "dinov2_swiglu"):
            entry["train"] = train(name, model, gen, TRAIN_BATCH if name == "tiny" else 2)
        doc["models"][name] = entry
    with open(os.path.join(OUT, "fixtures.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(OUT) for f in fs)
    if total > MAX_BYTES:
        raise SystemExit(f"testdata is {total} bytes, above {MAX_BYTES}")
    print(f"wrote {OUT} ({total} bytes)")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Write the parity fixtures of models/resnet and models/convnext with transformers.

Tiny random checkpoints are made by transformers itself (its own initialisation, seeded),
then every float tensor is moved off its initial value (noise on the weights, BatchNorm's
gains and biases, ConvNeXt's layer scale and ConvNeXt-V2's GRN, which start at 1, 0 or 1e-6
and would hide a mistake; BatchNorm's running statistics are then those of random images,
num_batches_tracked 7), and saved with save_pretrained:

  models/resnet/testdata/
    basic/       ResNetForImageClassification, layer_type "basic", embedding 8, hidden_sizes
                 [8, 16], depths [2, 1], downsample_in_first_stage true, 3 labels;
    bottleneck/  layer_type "bottleneck", embedding 8, hidden_sizes [16, 24], depths [1, 2],
                 downsample_in_bottleneck true, hidden_act "gelu" (the stem's and the blocks'
                 closing activation; the inner ones are ReLU in transformers), 3 labels;
  models/convnext/testdata/
    tiny/        ConvNextForImageClassification, patch 4, hidden_sizes [8, 16], depths [2, 1],
                 drop_path_rate 0.2 (eval ignores it), 3 labels;
    v2/          ConvNextV2ForImageClassification (GRN, no layer scale), the same shape.

Each folder has a preprocessor_config.json (ConvNextImageProcessor's, shortest_edge 32, crop_pct
0.875, as the released folders at 224). Each testdata/fixtures.json records, for each checkpoint, inputs and transformers' outputs as
base64 little-endian float32 with their shapes (the images as 8-bit pixels p, the model's
input being (p - 128) / 64), images channels last (NHWC, goaccel's
layout; the script transposes to and from PyTorch's NCHW):

  * "runs": eval mode on a batch of 3 random 32x32 images and of 2 random 40x48 ones: the
    last hidden state (NHWC) and the logits;
  * "train_forward" (ResNet): one forward in train mode on the 32x32 batch: the logits from
    the batch's statistics, and the state after it (running statistics updated,
    num_batches_tracked + 1) in NAME_train_forward.safetensors;
  * "train": 20 steps of plain SGD (lr 0.1; drop path off) on two fixed labelled batches of 4
    taken in turn, train mode: the mean cross-entropy of each step before its update, and the
    state after the 20 steps (weights and running statistics) in NAME_after_sgd.safetensors.

Pinned version (asserted): transformers 5.25.0 (torch 2.15.0).

Usage (the venv of the Makefile's torch-venv, with .deps/python on PYTHONPATH):
    $GOACCEL_TORCH_PYTHON scripts/make_vision_fixtures.py
"""

import base64
import json
import os
import shutil

import numpy as np
import torch
import transformers
from safetensors.torch import save_file
from transformers import (ConvNextConfig, ConvNextImageProcessorPil, ConvNextForImageClassification, ConvNextV2Config,
                          ConvNextV2ForImageClassification, ResNetConfig, ResNetForImageClassification)

TRANSFORMERS_VERSION = "5.25.0"
if transformers.__version__ != TRANSFORMERS_VERSION:
    raise SystemExit(f"transformers {transformers.__version__} found; this script is pinned to {TRANSFORMERS_VERSION}")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_BYTES = 400 * 1024  # each package's testdata together
STEPS, LR = 20, 0.1

LABELS = {"id2label": {"0": "cat", "1": "dog", "2": "bird"}, "label2id": {"cat": 0, "dog": 1, "bird": 2}}
RESNET = {
    "basic": ResNetConfig(embedding_size=8, hidden_sizes=[8, 16], depths=[2, 1], layer_type="basic",
                          downsample_in_first_stage=True, num_labels=3, **LABELS),
    "bottleneck": ResNetConfig(embedding_size=8, hidden_sizes=[16, 24], depths=[1, 2], layer_type="bottleneck",
                               downsample_in_bottleneck=True, hidden_act="gelu", num_labels=3, **LABELS),
}
CONVNEXT = {
    "tiny": (ConvNextForImageClassification,
             ConvNextConfig(num_stages=2, hidden_sizes=[8, 16], depths=[2, 1], drop_path_rate=0.2, num_labels=3,
                            image_size=32, **LABELS)),
    "v2": (ConvNextV2ForImageClassification,
           ConvNextV2Config(num_stages=2, hidden_sizes=[8, 16], depths=[2, 1], num_labels=3, image_size=32,
                            layer_norm_eps=1e-6, **LABELS)),
}


def b64(a):
    a = np.ascontiguousarray(a.detach().cpu().numpy().astype("<f4"))
    return base64.b64encode(a.tobytes()).decode()


def nhwc(x):
    return x.permute(0, 2, 3, 1)


def perturb(model, gen):
    """Moves every float tensor of the state off its initial value, reproducibly."""
    with torch.no_grad():
        for name, t in model.state_dict().items():
            if not t.is_floating_point():
                if name.endswith("num_batches_tracked"):
                    t.fill_(7)
                continue
            noise = torch.randn(t.shape, generator=gen)
            if name.endswith("running_var"):
                t.copy_(torch.rand(t.shape, generator=gen) + 0.5)
            elif name.endswith("running_mean"):
                t.copy_(0.3 * noise)
            elif t.dim() <= 1 or "grn" in name:
                t.add_(0.3 * noise)
            else:
                t.add_(0.2 * noise * t.std().clamp(min=0.05))


def calibrate(model, gen):
    """Sets the BatchNorms' running statistics to those of random images (a cumulative
    average over 4 batches in train mode), as a trained network's are: the activations stay
    of order 1 through the layers."""
    norms = [m for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    if not norms:
        return
    for m in norms:
        m.reset_running_stats()
        m.momentum = None
    model.train()
    with torch.no_grad():
        for _ in range(4):
            model(pixel_values=images(gen, 8, 32, 32))
    model.eval()
    for m in norms:
        m.momentum = 0.1
        m.num_batches_tracked.fill_(7)


def images(gen, b, h, w):
    """Random 8-bit images as pixel values (p - 128) / 64, exact in float32."""
    return (torch.randint(0, 256, (b, 3, h, w), generator=gen).float() - 128) / 64


def pixels(x):
    """The images of x (from images) as base64 bytes, NHWC."""
    p = (nhwc(x) * 64 + 128).round().to(torch.uint8)
    return {"pixels_shape": list(p.shape), "pixels_u8_b64": base64.b64encode(p.numpy().tobytes()).decode()}


def run_record(model, x):
    with torch.no_grad():
        out = model(pixel_values=x, output_hidden_states=True)
    hidden = out.hidden_states[-1]
    return {**pixels(x), "hidden_shape": list(nhwc(hidden).shape), "last_hidden_state_f32_b64": b64(nhwc(hidden)),
            "logits_shape": list(out.logits.shape), "logits_f32_b64": b64(out.logits)}


def state(model):
    return {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}


def train_record(model, gen, name, out):
    batches = [(images(gen, 4, 32, 32), torch.tensor(lab)) for lab in ([0, 1, 2, 1], [2, 0, 0, 1])]
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    model.train()
    losses = []
    for step in range(STEPS):
        x, y = batches[step % 2]
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(pixel_values=x).logits, y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    model.eval()
    save_file(state(model), os.path.join(out, f"{name}_after_sgd.safetensors"))
    return {"learning_rate": LR, "losses": losses, "state": f"{name}_after_sgd.safetensors",
            "batches": [{**pixels(x), "labels": y.tolist()}
                        for x, y in batches]}


def write(package, models):
    out = os.path.join(REPO, "models", package, "testdata")
    os.makedirs(out, exist_ok=True)
    fixtures = {"transformers_version": transformers.__version__, "torch_version": torch.__version__, "models": {}}
    for seed, (name, (cls, cfg)) in enumerate(models.items()):
        torch.manual_seed(seed)
        gen = torch.Generator().manual_seed(100 + seed)
        model = cls(cfg).eval()
        perturb(model, gen)
        calibrate(model, gen)
        folder = os.path.join(out, name)
        shutil.rmtree(folder, ignore_errors=True)
        model.save_pretrained(folder)
        # as microsoft/resnet-* and facebook/convnext-* have (224 there): resize the shortest
        # edge to 32/0.875, centre crop 32
        ConvNextImageProcessorPil(size={"shortest_edge": 32}, crop_pct=0.875).save_pretrained(folder)
        rec = {"folder": name, "runs": [run_record(model, images(gen, 3, 32, 32)),
                                        run_record(model, images(gen, 2, 40, 48))]}
        if package == "resnet":
            x = images(gen, 3, 32, 32)
            model.train()
            with torch.no_grad():
                logits = model(pixel_values=x).logits
            model.eval()
            save_file(state(model), os.path.join(out, f"{name}_train_forward.safetensors"))
            rec["train_forward"] = {**pixels(x), "logits_shape": list(logits.shape), "logits_f32_b64": b64(logits),
                                    "state": f"{name}_train_forward.safetensors"}
            model = cls.from_pretrained(folder).eval()  # the saved weights again, before training
        else:
            model = cls.from_pretrained(folder, drop_path_rate=0.0).eval()
        rec["train"] = train_record(model, gen, name, out)
        fixtures["models"][name] = rec
    with open(os.path.join(out, "fixtures.json"), "w") as f:
        json.dump(fixtures, f, indent=1)
    total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(out) for f in fs)
    if total > MAX_BYTES:
        raise SystemExit(f"{out}: {total} bytes, over {MAX_BYTES}")
    print(f"{out}: {len(models)} checkpoints, {total} bytes")


if __name__ == "__main__":
    torch.use_deterministic_algorithms(True)
    write("resnet", {k: (ResNetForImageClassification, v) for k, v in RESNET.items()})
    write("convnext", CONVNEXT)

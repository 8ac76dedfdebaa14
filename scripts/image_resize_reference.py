#!/usr/bin/env python3
"""Reference outputs of Pillow's Image.resize, torchvision's transforms and transformers' image
processors on scikit-image's sample photos, for data/image/transforms' parity tests.

  image_resize_reference.py --fixtures DIR   small crops of the photos, their Pillow resizes and
                                             torchvision's brightness/contrast/saturation of one
                                             (PNG, < 1 MB; data/image/transforms/testdata/resize)
  image_resize_reference.py --full DIR       whole photos (raw RGB), Pillow resizes of them and
                                             the float outputs of ViTImageProcessor(Pil),
                                             ConvNextImageProcessor(Pil) and torchvision's
                                             transforms on PIL images (TestPhotosAgainstPillow
                                             runs this when GOACCEL_TORCH_PYTHON is set)

Pins: Pillow 13.0.0, scikit-image 0.26.0 (the photos ship in its wheel), torchvision 0.29,
transformers 5.25.0 (the torch venv of `make torch-venv`).
"""

import argparse
import json
import os
import sys

import numpy as np
from PIL import Image

FILTERS = {
    "nearest": Image.Resampling.NEAREST,
    "bilinear": Image.Resampling.BILINEAR,
    "bicubic": Image.Resampling.BICUBIC,
    "lanczos": Image.Resampling.LANCZOS,
    "box": Image.Resampling.BOX,
    "hamming": Image.Resampling.HAMMING,
}

IMAGENET_MEAN = [0.485, 0.456, 0.406]
IMAGENET_STD = [0.229, 0.224, 0.225]


def photo(name):
    import skimage

    path = os.path.join(os.path.dirname(skimage.__file__), "data", name)
    im = Image.open(path)
    im.load()
    return im, im.mode


def fixtures(out):
    # (photo, crop box): RGB, gray (L) and RGBA photos, a JPEG; odd sizes.
    sources = [
        ("chelsea.png", (150, 60, 214, 108)),
        ("camera.png", (200, 60, 251, 127)),
        ("horse.png", (120, 100, 190, 150)),
        ("hubble_deep_field.jpg", (400, 300, 457, 353)),
    ]
    os.makedirs(out, exist_ok=True)
    cases = []
    for name, box in sources:
        im, mode = photo(name)
        # transformers' load_image: convert("RGB") first (alpha dropped, gray replicated).
        src = im.convert("RGB").crop(box)
        stem = os.path.splitext(name)[0]
        src_file = stem + ".png"
        src.save(os.path.join(out, src_file))
        w, h = src.size
        targets = [
            (max(1, round(w / 2.7)), max(1, round(h / 3.1))),  # shrink, antialiased
            (w // 2, h // 2),  # shrink by 2
            (w * 9 // 10, h - 1),  # a mild shrink
            (w * 5 // 4 + 1, h * 4 // 3),  # enlarge
            (w + 17, max(1, h // 4)),  # wider and shorter
            (1, h),  # one column
        ]
        for fname, f in FILTERS.items():
            for tw, th in targets:
                r = src.resize((tw, th), f)
                of = f"{stem}_{fname}_{tw}x{th}.png"
                r.save(os.path.join(out, of))
                cases.append({"source": src_file, "filter": fname, "width": tw, "height": th, "file": of, "mode": mode})
    with open(os.path.join(out, "cases.json"), "w") as f:
        json.dump({"pillow": Image.__version__, "cases": cases}, f, indent=0)
    enhance(out)


def enhance(out):
    """torchvision's adjust_brightness, adjust_contrast, adjust_saturation (ImageEnhance's
    blends) and adjust_hue (through Pillow's HSV) on PIL images, for ColorJitter's
    deterministic part; and its center_crop."""
    from torchvision.transforms import functional as F

    src = Image.open(os.path.join(out, "chelsea.png")).convert("RGB")
    cases = []
    for kind, fn, factors in [
        ("brightness", F.adjust_brightness, [0.0, 0.6, 1.4, 2.5]),
        ("contrast", F.adjust_contrast, [0.0, 0.5, 1.7]),
        ("saturation", F.adjust_saturation, [0.0, 0.3, 1.8]),
        ("hue", F.adjust_hue, [-0.5, -0.4, -0.1, 0.0, 0.05, 0.3, 0.5]),
    ]:
        for factor in factors:
            of = f"chelsea_{kind}_{factor}.png"
            fn(src, factor).save(os.path.join(out, of))
            cases.append({"kind": kind, "factor": factor, "file": of})
    # Every hue sector: a 64x64 image of 16 levels of R, G and B.
    lv = np.arange(16, dtype=np.uint8) * 17
    cube = np.stack(np.meshgrid(lv, lv, lv, indexing="ij"), -1).reshape(64, 64, 3)
    Image.fromarray(cube, "RGB").save(os.path.join(out, "rgbcube.png"))
    for factor in [-0.45, -0.2, 0.0, 0.13, 0.5]:
        of = f"rgbcube_hue_{factor}.png"
        F.adjust_hue(Image.fromarray(cube, "RGB"), factor).save(os.path.join(out, of))
        cases.append({"kind": "hue", "factor": factor, "file": of, "source": "rgbcube.png"})
    # torchvision's rotate (NEAREST, expand=False, fill 0 or a colour), on a non-square crop
    # (90 and 270 through the affine path) and the square cube (through transposes).
    for name, img in [("chelsea", src), ("rgbcube", Image.fromarray(cube, "RGB"))]:
        for angle, fill in [(-30.5, None), (10.0, None), (45.0, [10, 200, 30]), (90.0, None), (180.0, None),
                            (270.0, None), (123.4, None), (-400.0, None), (0.0, None), (1e-3, None)]:
            of = f"{name}_rotate_{angle}.png"
            F.rotate(img, angle, fill=fill).save(os.path.join(out, of))
            cases.append({"kind": "rotate", "factor": angle, "fill": fill, "file": of, "source": name + ".png"})
    # torchvision's CenterCrop on PIL: round()ed corners, zero padding when the image is smaller.
    for ch, cw in [(30, 20), (47, 47), (60, 50), (40, 80), (49, 65), (45, 61)]:
        of = f"chelsea_centercrop_{ch}x{cw}.png"
        F.center_crop(src, [ch, cw]).save(os.path.join(out, of))
        cases.append({"kind": "centercrop", "height": ch, "width": cw, "file": of})
    with open(os.path.join(out, "enhance.json"), "w") as f:
        json.dump({"pillow": Image.__version__, "source": "chelsea.png", "cases": cases}, f, indent=0)


def raw(out, name, arr):
    arr = np.ascontiguousarray(arr)
    arr.tofile(os.path.join(out, name))
    return name


def full(out):
    import torch
    import torchvision
    import transformers
    from torchvision import transforms as T
    from transformers.models.convnext.image_processing_convnext import ConvNextImageProcessor
    from transformers.models.convnext.image_processing_pil_convnext import ConvNextImageProcessorPil
    from transformers.models.vit.image_processing_pil_vit import ViTImageProcessorPil
    from transformers.models.vit.image_processing_vit import ViTImageProcessor

    torch.set_num_threads(1)
    os.makedirs(out, exist_ok=True)
    names = [
        "astronaut.png",
        "chelsea.png",
        "coffee.png",
        "motorcycle_left.png",
        "rocket.jpg",
        "hubble_deep_field.jpg",
        "camera.png",
        "coins.png",
        "horse.png",
        "logo.png",
    ]
    photos, resizes, pipes = [], [], []
    vit = {"size": {"height": 224, "width": 224}}
    cnx = {"size": {"shortest_edge": 224}, "crop_pct": 0.875, "image_mean": IMAGENET_MEAN, "image_std": IMAGENET_STD}
    processors = {
        "vit_pil": ViTImageProcessorPil(**vit),
        "vit_torchvision": ViTImageProcessor(**vit),
        "convnext_pil": ConvNextImageProcessorPil(**cnx),
        "convnext_torchvision": ConvNextImageProcessor(**cnx),
    }
    tv = {
        "tv_vit": T.Compose([T.Resize((224, 224)), T.ToTensor(), T.Normalize([0.5] * 3, [0.5] * 3)]),
        "tv_resnet": T.Compose(
            [
                T.Resize(256, interpolation=T.InterpolationMode.BICUBIC),
                T.CenterCrop(224),
                T.ToTensor(),
                T.Normalize(IMAGENET_MEAN, IMAGENET_STD),
            ]
        ),
    }
    for name in names:
        im, mode = photo(name)
        rgb = im.convert("RGB")
        stem = os.path.splitext(name)[0]
        w, h = rgb.size
        photos.append({"name": stem, "file": raw(out, stem + ".rgb", np.asarray(rgb)), "width": w, "height": h, "mode": mode})
        for fname, f in FILTERS.items():
            for tw, th in [(224, 224), (w * 3 // 2, h * 3 // 2), (w // 3, h * 2 // 3)]:
                r = rgb.resize((tw, th), f)
                resizes.append({"photo": stem, "filter": fname, "width": tw, "height": th,
                                "file": raw(out, f"{stem}_{fname}_{tw}x{th}.rgb", np.asarray(r))})
            # torchvision's Resize(256) (shorter edge) on the PIL image.
            r = T.Resize(256, interpolation=T.InterpolationMode(fname))(rgb)
            resizes.append({"photo": stem, "filter": fname, "shorter": 256, "width": r.size[0], "height": r.size[1],
                            "file": raw(out, f"{stem}_{fname}_short256.rgb", np.asarray(r))})
        for pname, p in processors.items():
            v = p(rgb, return_tensors="np")["pixel_values"][0]  # CHW float32
            pipes.append({"photo": stem, "pipeline": pname, "backend": p.backend,
                          "file": raw(out, f"{stem}_{pname}.f32", v.transpose(1, 2, 0).astype(np.float32))})
        for pname, t in tv.items():
            v = t(rgb).numpy()
            pipes.append({"photo": stem, "pipeline": pname, "backend": "torchvision-pil",
                          "file": raw(out, f"{stem}_{pname}.f32", v.transpose(1, 2, 0).astype(np.float32))})
    versions = {"pillow": Image.__version__, "torchvision": torchvision.__version__, "transformers": transformers.__version__}
    with open(os.path.join(out, "cases.json"), "w") as f:
        json.dump({"versions": versions, "photos": photos, "resizes": resizes, "pipelines": pipes}, f)


def main():
    ap = argparse.ArgumentParser()
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--fixtures")
    g.add_argument("--full")
    a = ap.parse_args()
    if a.fixtures:
        fixtures(a.fixtures)
    else:
        full(a.full)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Reference pixels of transformers' image processors for models/auto's image processor tests.

  imageprocessor_reference.py OUT PROCESSOR_DIR...

Each PROCESSOR_DIR holds a preprocessor_config.json (goaccel's SavePretrained wrote most of
them; the legacy ones are written by the test as older checkpoints have them). For each,
AutoImageProcessor.from_pretrained loads it with backend="pil" (the *ImageProcessorPil class,
the one goaccel's pixels are held to) and with backend="torchvision" (measured only), and runs
it on scikit-image's sample photos as transformers' image-classification pipeline loads them
(load_image: exif_transpose, convert("RGB")). Written into OUT: PHOTO.rgb (the photo's RGB
bytes, HWC), NAME.PHOTO.BACKEND.f32 (pixel_values, CHW float32 little-endian) and cases.json.

Pins: transformers 5.25.0, Pillow 13.0.0, torchvision 0.29.2, scikit-image 0.26.0.
"""

import json
import os
import sys

import numpy as np
import PIL
import skimage
import torchvision
import transformers
from transformers import AutoImageProcessor
from transformers.image_utils import load_image

PHOTOS = ["astronaut.png", "chelsea.png", "coffee.png", "camera.png", "logo.png", "rocket.jpg", "hubble_deep_field.jpg"]


def main():
    out, dirs = sys.argv[1], sys.argv[2:]
    data = os.path.join(os.path.dirname(skimage.__file__), "data")
    photos = []
    for name in PHOTOS:
        im = load_image(os.path.join(data, name))
        arr = np.asarray(im, dtype=np.uint8)
        arr.tofile(os.path.join(out, name + ".rgb"))
        photos.append({"name": name, "width": im.width, "height": im.height, "path": os.path.join(data, name)})
    cases = []
    for d in dirs:
        name = os.path.basename(d)
        for backend in ["pil", "torchvision"]:
            p = AutoImageProcessor.from_pretrained(d, backend=backend)
            for ph in photos:
                im = load_image(ph["path"])
                try:
                    pv = p(images=im, return_tensors="np")["pixel_values"][0].astype(np.float32)
                except NotImplementedError as e:  # torchvision's resize has no BOX or HAMMING filter
                    if backend == "pil":
                        raise
                    cases.append({"processor": name, "class": type(p).__name__, "backend": backend,
                                  "photo": ph["name"], "error": str(e).splitlines()[0][:160]})
                    continue
                f = f"{name}.{ph['name']}.{backend}.f32"
                pv.tofile(os.path.join(out, f))
                cases.append({"processor": name, "class": type(p).__name__, "backend": backend, "photo": ph["name"],
                              "file": f, "shape": list(pv.shape)})
    versions = {"transformers": transformers.__version__, "Pillow": PIL.__version__,
                "torchvision": torchvision.__version__, "scikit-image": skimage.__version__}
    json.dump({"versions": versions, "photos": photos, "cases": cases}, open(os.path.join(out, "cases.json"), "w"))
    print(json.dumps({"ok": True}))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes data/image/testdata: small images in many modes and formats with the RGB bytes
Pillow decodes from them (ImageOps.exif_transpose(Image.open(f)).convert("RGB"), as
transformers' load_image does), bad files, and tiny CIFAR-10/100 sets in both distributed
formats (Python 2-style pickles, and the binary records).

Run with the torch venv's Python (numpy, Pillow 13.0.0):
  python scripts/make_image_fixtures.py data/image/testdata
"""
import hashlib
import io
import json
import os
import pickle
import struct
import sys
import zlib

import numpy as np
import PIL
from PIL import Image, ImageOps

assert PIL.__version__ == "13.0.0", PIL.__version__

OUT = sys.argv[1] if len(sys.argv) > 1 else "data/image/testdata"
rng = np.random.default_rng(58)


def photo(w, h):
    """A smooth picture with some edges and noise (JPEG-friendly)."""
    y, x = np.mgrid[0:h, 0:w]
    r = 128 + 100 * np.sin(x / 5.0)
    g = 255.0 * y / max(h - 1, 1)
    b = np.where((x // 8 + y // 8) % 2 == 0, 40, 210)
    a = np.stack([r, g, b], -1) + rng.normal(0, 6, (h, w, 3))
    return np.clip(a, 0, 255).astype(np.uint8)


def png_chunk(typ, data):
    return struct.pack(">I", len(data)) + typ + data + struct.pack(">I", zlib.crc32(typ + data) & 0xFFFFFFFF)


def raw_png(w, h, depth, ctype, rows, extra=b""):
    """A PNG written by hand, for modes Pillow cannot write (16-bit colour, 2-bit gray)."""
    ihdr = struct.pack(">IIBBBBB", w, h, depth, ctype, 0, 0, 0)
    raw = b"".join(b"\x00" + r for r in rows)
    return (b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) + extra +
            png_chunk(b"IDAT", zlib.compress(raw)) + png_chunk(b"IEND", b""))


def exif_orientation(o):
    e = Image.Exif()
    e[0x0112] = o
    return e.tobytes()


def pillow_rgb(data):
    with Image.open(io.BytesIO(data)) as im:
        im = ImageOps.exif_transpose(im)
        return im.convert("RGB")


def main():
    dec = os.path.join(OUT, "decode")
    os.makedirs(dec, exist_ok=True)
    manifest = {}

    def add(name, data, exact=True):
        with open(os.path.join(dec, name), "wb") as f:
            f.write(data)
        rgb = pillow_rgb(data)
        with open(os.path.join(dec, name + ".rgb"), "wb") as f:
            f.write(rgb.tobytes())
        manifest[name] = {"width": rgb.width, "height": rgb.height, "exact": exact,
                          "sha256": hashlib.sha256(rgb.tobytes()).hexdigest()}

    def save(im, fmt, **kw):
        b = io.BytesIO()
        im.save(b, fmt, **kw)
        return b.getvalue()

    W, H = 13, 9
    rgb = rng.integers(0, 256, (H, W, 3), dtype=np.uint8)
    rgba = rng.integers(0, 256, (H, W, 4), dtype=np.uint8)
    rgba[0, :, 3] = 0  # fully transparent pixels keep their colour in convert("RGB")
    gray = rng.integers(0, 256, (H, W), dtype=np.uint8)
    la = rng.integers(0, 256, (H, W, 2), dtype=np.uint8)
    pal = Image.fromarray(rgb).quantize(16)

    # PNG: every mode, exact.
    add("rgb.png", save(Image.fromarray(rgb), "PNG"))
    add("rgba.png", save(Image.fromarray(rgba), "PNG"))
    add("l.png", save(Image.fromarray(gray), "PNG"))
    add("la.png", save(Image.fromarray(la, "LA"), "PNG"))
    add("l_trns.png", save(Image.fromarray(gray), "PNG", transparency=int(gray[0, 0])))
    add("one_bit.png", save(Image.fromarray(gray > 127), "PNG"))
    add("p.png", save(pal, "PNG"))
    add("p_trns_index.png", save(pal, "PNG", transparency=3))
    add("p_trns_bytes.png", save(pal, "PNG", transparency=bytes(range(0, 256, 16))))
    i16 = rng.integers(0, 65536, (H, W), dtype=np.uint16)
    i16[0, :4] = [0, 1, 255, 256]
    add("i16.png", save(Image.fromarray(i16), "PNG"))
    rgb16 = rng.integers(0, 65536, (H, W, 3), dtype=np.uint16)
    add("rgb16.png", raw_png(W, H, 16, 2, [r.astype(">u2").tobytes() for r in rgb16]))
    rgba16 = rng.integers(0, 65536, (H, W, 4), dtype=np.uint16)
    add("rgba16.png", raw_png(W, H, 16, 6, [r.astype(">u2").tobytes() for r in rgba16]))
    la16 = rng.integers(0, 65536, (H, W, 2), dtype=np.uint16)
    add("la16.png", raw_png(W, H, 16, 4, [r.astype(">u2").tobytes() for r in la16]))
    g2 = rng.integers(0, 4, (H, 16), dtype=np.uint8)
    add("gray2.png", raw_png(16, H, 2, 0, [np.packbits(np.unpackbits(r[:, None], axis=1)[:, 6:].reshape(-1)).tobytes() for r in g2]))
    # EXIF orientation 1..8 on a PNG (eXIf chunk): exact.
    for o in range(1, 9):
        add(f"orient{o}.png", save(Image.fromarray(rgb), "PNG", exif=exif_orientation(o)))

    # Other lossless formats: exact.
    add("p_trns.gif", save(pal, "GIF", transparency=5))
    add("l.gif", save(Image.fromarray(gray), "GIF"))
    add("rgb.bmp", save(Image.fromarray(rgb), "BMP"))
    add("p.bmp", save(pal, "BMP"))
    add("l.bmp", save(Image.fromarray(gray), "BMP"))
    add("rgb.tif", save(Image.fromarray(rgb), "TIFF"))
    add("rgba.tif", save(Image.fromarray(rgba), "TIFF"))
    add("l.tif", save(Image.fromarray(gray), "TIFF"))
    add("orient6.tif", save(Image.fromarray(rgb), "TIFF", exif=exif_orientation(6)))
    add("lossless.webp", save(Image.fromarray(rgb), "WEBP", lossless=True))
    add("lossless_rgba.webp", save(Image.fromarray(rgba), "WEBP", lossless=True))
    add("orient8.webp", save(Image.fromarray(rgb), "WEBP", lossless=True, exif=exif_orientation(8)))
    # Lossy WebP: exact too (the fancy upsampler and BT.601 conversion of libwebp).
    add("lossy.webp", save(Image.fromarray(photo(32, 24)), "WEBP", quality=90))
    add("lossy_odd.webp", save(Image.fromarray(photo(33, 25)), "WEBP", quality=80))
    lrgba = np.concatenate([photo(31, 22), rng.integers(0, 256, (22, 31, 1), dtype=np.uint8)], -1)
    add("lossy_rgba.webp", save(Image.fromarray(lrgba), "WEBP", quality=85))

    # JPEG: compared within a tolerance (Go's decoder is not libjpeg-turbo).
    ph = Image.fromarray(photo(40, 24))
    add("q444.jpg", save(ph, "JPEG", quality=95, subsampling=0), exact=False)
    add("q422.jpg", save(ph, "JPEG", quality=95, subsampling=1), exact=False)
    add("q420.jpg", save(ph, "JPEG", quality=95, subsampling=2), exact=False)
    add("progressive.jpg", save(ph, "JPEG", quality=90, progressive=True), exact=False)
    add("gray.jpg", save(ph.convert("L"), "JPEG", quality=95), exact=False)
    add("cmyk.jpg", save(ph.convert("CMYK"), "JPEG", quality=95), exact=False)
    add("orient6.jpg", save(ph, "JPEG", quality=95, exif=exif_orientation(6)), exact=False)
    odd = Image.fromarray(photo(41, 23))
    add("q420_odd.jpg", save(odd, "JPEG", quality=90, subsampling=2), exact=False)
    add("q422_odd.jpg", save(odd, "JPEG", quality=90, subsampling=1), exact=False)
    add("orient3.jpg", save(ph, "JPEG", quality=95, exif=exif_orientation(3)), exact=False)

    # Netpbm (torchvision lists .ppm and .pgm): Pillow writes P5/P6 at maxval 255; other
    # maxvals, 16-bit and the plain forms written by hand. A separate generator keeps the
    # other fixtures' random draws unchanged.
    r2 = np.random.default_rng(59)
    add("rgb.ppm", save(Image.fromarray(rgb), "PPM"))
    add("l.pgm", save(Image.fromarray(gray), "PPM"))
    g100 = r2.integers(0, 101, (H, W), dtype=np.uint8)
    add("max100.pgm", b"P5\n# a comment\n%d %d\n100\n" % (W, H) + g100.tobytes())
    c1000 = r2.integers(0, 1001, (H, W, 3), dtype=np.uint16)
    add("max1000.ppm", b"P6 %d %d 1000\n" % (W, H) + c1000.astype(">u2").tobytes())
    g16 = r2.integers(0, 65536, (H, W), dtype=np.uint16)
    g16[0, :3] = [0, 200, 300]
    add("gray16.pgm", b"P5 %d %d 65535\n" % (W, H) + g16.astype(">u2").tobytes())
    g4000 = r2.integers(0, 4001, (H, W), dtype=np.uint16)
    add("max4000.pgm", b"P5 %d %d 4000\n" % (W, H) + g4000.astype(">u2").tobytes())
    p3 = r2.integers(0, 16, (H, W, 3))
    add("plain.ppm", b"P3\n%d %d\n15\n" % (W, H) + "\n".join(" ".join(str(v) for v in row.reshape(-1)) for row in p3).encode() + b"\n")
    p2 = r2.integers(0, 256, (H, W))
    add("plain.pgm", b"P2 %d %d 255\n" % (W, H) + " ".join(str(v) for v in p2.reshape(-1)).encode() + b"\n")
    bits = r2.integers(0, 2, (H, W))
    add("plain.pbm", b"P1\n%d %d\n" % (W, H) + "\n".join("".join(str(v) for v in row) for row in bits).encode() + b"\n")
    add("bits.pbm", save(Image.fromarray(bits.astype(bool)), "PPM"))

    with open(os.path.join(dec, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)

    # Bad files.
    bad = os.path.join(OUT, "bad")
    os.makedirs(bad, exist_ok=True)
    good = save(Image.fromarray(photo(32, 24)), "PNG")
    with open(os.path.join(bad, "truncated.png"), "wb") as f:
        f.write(good[: len(good) * 2 // 3])
    with open(os.path.join(bad, "text.jpg"), "w") as f:
        f.write("this is not a JPEG, only a text file named .jpg\n")
    with open(os.path.join(bad, "huge.png"), "wb") as f:  # a header claiming 60000x60000
        f.write(raw_png(60000, 60000, 8, 2, []) [:33] + png_chunk(b"IDAT", zlib.compress(b"\x00" * 100)) + png_chunk(b"IEND", b""))
    try:  # Pillow refuses it from the header, as Decoder does
        Image.open(os.path.join(bad, "huge.png"))
        raise AssertionError("Pillow opened huge.png")
    except Image.DecompressionBombError:
        pass
    jpg = save(ph, "JPEG", quality=90)
    with open(os.path.join(bad, "truncated.jpg"), "wb") as f:
        f.write(jpg[: len(jpg) // 2])

    # A small image folder (torchvision's ImageFolder layout) for the examples.
    r3 = np.random.default_rng(60)
    for name in ["cat/cat_1.png", "cat/cat_2.png", "cat/more/cat_3.jpg", "dog/dog_1.png", "dog/dog_2.webp", "dog/notes.txt"]:
        p = os.path.join(OUT, "folder", name)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        if name.endswith(".txt"):
            open(p, "w").write("not an image: left out\n")
            continue
        im = Image.fromarray(r3.integers(0, 256, (6, 8, 3), dtype=np.uint8))
        im.save(p, quality=90) if name.endswith(".jpg") else im.save(p, lossless=True) if name.endswith(".webp") else im.save(p)

    cifar(OUT)


# ---- CIFAR ---------------------------------------------------------------------------------
# Python 2's cPickle (protocol 2) wrote the CIFAR batches: py2 str as SHORT_BINSTRING/BINSTRING,
# numpy arrays through numpy.core.multiarray._reconstruct, a memo PUT after each object.
# Python 3's pickle cannot write py2 str (bytes become _codecs.encode calls), so the opcodes are
# written here by hand, the way cPickle laid them out.

class Py2Pickler:
    def __init__(self):
        self.out = bytearray(b"\x80\x02")
        self.memo = 0

    def put(self):
        self.memo += 1
        self.out += (b"q" + bytes([self.memo])) if self.memo < 256 else (b"r" + struct.pack("<I", self.memo))

    def str_(self, s):
        if isinstance(s, str):
            s = s.encode("latin1")
        if len(s) < 256:
            self.out += b"U" + bytes([len(s)]) + s
        else:
            self.out += b"T" + struct.pack("<i", len(s)) + s
        self.put()

    def int_(self, v):
        if 0 <= v < 256:
            self.out += b"K" + bytes([v])
        elif 0 <= v < 65536:
            self.out += b"M" + struct.pack("<H", v)
        else:
            self.out += b"J" + struct.pack("<i", v)

    def glob(self, mod, name):
        self.out += b"c" + mod.encode() + b"\n" + name.encode() + b"\n"
        self.put()

    def obj(self, v):
        if isinstance(v, (bytes, str)):
            self.str_(v)
        elif isinstance(v, bool):
            self.out += b"\x88" if v else b"\x89"
        elif isinstance(v, int):
            self.int_(v)
        elif v is None:
            self.out += b"N"
        elif isinstance(v, list):
            self.out += b"]"
            self.put()
            for k in range(0, len(v), 1000):  # cPickle batches APPENDS by 1000
                self.out += b"("
                for x in v[k:k + 1000]:
                    self.obj(x)
                self.out += b"e"
        elif isinstance(v, dict):
            self.out += b"}"
            self.put()
            self.out += b"("
            for k, x in v.items():
                self.obj(k)
                self.obj(x)
            self.out += b"u"
        elif isinstance(v, np.ndarray):
            self.array(v)
        else:
            raise TypeError(type(v))

    def array(self, a):
        assert a.dtype == np.uint8
        self.glob("numpy.core.multiarray", "_reconstruct")
        self.glob("numpy", "ndarray")
        self.out += b"K\x00\x85"  # (0,)
        self.put()
        self.str_(b"b")
        self.out += b"\x87R"  # TUPLE3 REDUCE
        self.put()
        self.out += b"(K\x01"
        for d in a.shape:
            self.int_(d)
        self.out += {1: b"\x85", 2: b"\x86", 3: b"\x87"}[a.ndim]
        self.put()
        self.glob("numpy", "dtype")
        self.str_(b"u1")
        self.out += b"K\x00K\x01\x87R"
        self.put()
        self.out += b"(K\x03"
        self.str_(b"|")
        self.out += b"NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK\x00t"
        self.put()
        self.out += b"b\x89"
        self.str_(a.tobytes())
        self.out += b"t"
        self.put()
        self.out += b"b"

    def done(self):
        return bytes(self.out + b".")


def py2_pickle(d):
    p = Py2Pickler()
    p.obj(d)
    return p.done()


def cifar(out):
    root = os.path.join(out, "cifar")
    names10 = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
    fine = [f"fine{i:02d}" for i in range(100)]
    coarse = [f"coarse{i:02d}" for i in range(20)]
    expect = {}

    def write(path, data):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)

    def check(path, want):
        # Read back as torchvision's CIFAR10 reads: pickle.load(f, encoding="latin1").
        with open(path, "rb") as f:
            got = pickle.load(f, encoding="latin1")
        assert set(got) == set(want), (set(got), set(want))
        for k, v in want.items():
            if isinstance(v, np.ndarray):
                assert np.array_equal(got[k], v), k
            else:
                assert got[k] == v, k

    # CIFAR-10: 5 train batches of 3, a test batch of 4.
    py10 = os.path.join(root, "cifar-10-batches-py")
    bin10 = os.path.join(root, "cifar-10-batches-bin")
    split_pix = {"train": [], "test": []}
    split_lab = {"train": [], "test": []}
    batches = [(f"data_batch_{i}", "train", 3) for i in range(1, 6)] + [("test_batch", "test", 4)]
    for name, split, n in batches:
        data = rng.integers(0, 256, (n, 3072), dtype=np.uint8)
        labels = [int(x) for x in rng.integers(0, 10, n)]
        d = {"batch_label": f"{name} of tiny", "labels": labels, "data": data,
             "filenames": [f"img_{name}_{k}.png" for k in range(n)]}
        write(os.path.join(py10, name), py2_pickle(d))
        check(os.path.join(py10, name), d)
        rec = b"".join(bytes([labels[k]]) + data[k].tobytes() for k in range(n))
        write(os.path.join(bin10, name + ".bin"), rec)
        split_pix[split].append(data)
        split_lab[split] += labels
    meta = {"num_cases_per_batch": 3, "label_names": names10, "num_vis": 3072}
    write(os.path.join(py10, "batches.meta"), py2_pickle(meta))
    check(os.path.join(py10, "batches.meta"), meta)
    write(os.path.join(bin10, "batches.meta.txt"), ("\n".join(names10) + "\n\n").encode())
    for split in ("train", "test"):
        pix = np.concatenate(split_pix[split])
        hwc = pix.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
        expect[f"cifar10/{split}"] = {"labels": split_lab[split], "names": names10,
                                      "hwc_sha256": hashlib.sha256(hwc.tobytes()).hexdigest(),
                                      "first_pixel": [int(v) for v in hwc[0, 0, 0]]}

    # CIFAR-100: train of 5, test of 3.
    py100 = os.path.join(root, "cifar-100-python")
    bin100 = os.path.join(root, "cifar-100-binary")
    for split, n in (("train", 5), ("test", 3)):
        data = rng.integers(0, 256, (n, 3072), dtype=np.uint8)
        fl = [int(x) for x in rng.integers(0, 100, n)]
        cl = [int(x) for x in rng.integers(0, 20, n)]
        d = {"filenames": [f"f{k}.png" for k in range(n)], "batch_label": f"{split} of tiny",
             "fine_labels": fl, "coarse_labels": cl, "data": data}
        write(os.path.join(py100, split), py2_pickle(d))
        check(os.path.join(py100, split), d)
        write(os.path.join(bin100, split + ".bin"),
              b"".join(bytes([cl[k], fl[k]]) + data[k].tobytes() for k in range(n)))
        hwc = data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
        expect[f"cifar100/{split}"] = {"labels": fl, "coarse": cl, "names": fine, "coarse_names": coarse,
                                       "hwc_sha256": hashlib.sha256(hwc.tobytes()).hexdigest(),
                                       "first_pixel": [int(v) for v in hwc[0, 0, 0]]}
    meta = {"fine_label_names": fine, "coarse_label_names": coarse}
    write(os.path.join(py100, "meta"), py2_pickle(meta))
    check(os.path.join(py100, "meta"), meta)
    write(os.path.join(bin100, "fine_label_names.txt"), ("\n".join(fine) + "\n").encode())
    write(os.path.join(bin100, "coarse_label_names.txt"), ("\n".join(coarse) + "\n").encode())
    with open(os.path.join(root, "expect.json"), "w") as f:
        json.dump(expect, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()

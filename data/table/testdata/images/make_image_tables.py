"""Writes data/table's image-column fixtures as Hugging Face datasets writes them.

Run from the repository root with datasets 5.2.0 (pyarrow 26) and Pillow installed, e.g.
    python3 -m venv /tmp/dsvenv && /tmp/dsvenv/bin/pip install datasets==5.2.0 pillow
    /tmp/dsvenv/bin/python data/table/testdata/images/make_image_tables.py

Files (all in this folder, a few KB in all):
  img/red.png, img/gray.png, img/cmyk.jpg   images a path cell names (relative to the table)
  images.parquet   Dataset.to_parquet of an Image feature (struct<bytes: binary, path: string>):
                   rows with bytes only, a path only, both; labels as ClassLabel ids ("label"),
                   class lists ("tags", multi-label), floats ("score", regression)
  images.jsonl     Dataset.to_json of the path-only rows ({"bytes": null, "path": ...}, which is
                   all to_json can write: pandas refuses binary bytes) plus rows whose image is a
                   bare path string, as load_dataset("json") with an Image feature reads them
  images_groups.parquet  images.parquet's rows in row groups of 3 and 1 rows
  bad_null.parquet     row 2's image has both bytes and path null
  bad_struct_null.parquet  row 1's image struct itself is null
  bad_bytes.parquet    row 2's bytes are not an image
  bad_missing.jsonl    line 2 names a file that does not exist
  bad_bytes.jsonl      line 1 has non-null bytes (JSON cannot hold them as datasets writes)
"""
import io
import json
import os

import datasets
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
os.makedirs(os.path.join(HERE, "img"), exist_ok=True)
os.chdir(HERE)  # datasets opens relative paths from the working folder


def encoded(img, fmt):
    b = io.BytesIO()
    img.save(b, fmt)
    return b.getvalue()


red = Image.new("RGB", (5, 4), (250, 10, 20))
gray = Image.linear_gradient("L").resize((6, 3))
cmyk = Image.new("CMYK", (4, 4), (10, 200, 30, 5))
red.save(os.path.join(HERE, "img", "red.png"))
gray.save(os.path.join(HERE, "img", "gray.png"))
cmyk.save(os.path.join(HERE, "img", "cmyk.jpg"), quality=95)

blue_png = encoded(Image.new("RGB", (3, 2), (0, 0, 255)), "PNG")
green_jpg = encoded(Image.new("RGB", (8, 8), (0, 200, 0)), "JPEG")

features = datasets.Features({
    "image": datasets.Image(),
    "label": datasets.ClassLabel(names=["cat", "dog", "fox"]),
    "tags": datasets.Sequence(datasets.Value("string")),
    "score": datasets.Value("float64"),
})
rows = [
    ({"bytes": blue_png, "path": None}, 2, ["night"], 0.5),
    ({"bytes": None, "path": "img/red.png"}, 0, ["day", "red"], 1.25),
    ({"bytes": green_jpg, "path": "green.jpg"}, 1, ["day"], -2.0),
    ({"bytes": None, "path": "img/gray.png"}, 0, ["night", "red"], 3.0),
]


def dataset(rows, feats=features):
    cols = {k: [r[i] for r in rows] for i, k in enumerate(["image", "label", "tags", "score"])}
    return datasets.Dataset.from_dict(cols, features=feats)


dataset(rows).to_parquet(os.path.join(HERE, "images.parquet"))

path_rows = [r for r in rows if r[0]["bytes"] is None]
dataset(path_rows).to_json(os.path.join(HERE, "images.jsonl"))
with open(os.path.join(HERE, "images.jsonl"), "a") as f:  # bare path strings, relative to the file
    f.write(json.dumps({"image": "img/cmyk.jpg", "label": 2, "tags": ["day"], "score": 0.0}) + "\n")

# datasets refuses to write the broken cells below, so pyarrow writes them into the table that
# datasets made (its schema and "huggingface" metadata kept).
import pyarrow as pa
import pyarrow.parquet as pq

good = dataset(rows).data.table


def with_images(cells, mask=None, name=None):
    img = good.column("image").combine_chunks()
    arr = pa.StructArray.from_arrays(
        [pa.array([c["bytes"] for c in cells], pa.binary()), pa.array([c["path"] for c in cells], pa.string())],
        fields=list(img.type), mask=None if mask is None else pa.array(mask))
    pq.write_table(good.set_column(0, good.schema.field("image"), arr), os.path.join(HERE, name))


cells = [r[0] for r in rows]
pq.write_table(good, os.path.join(HERE, "images_groups.parquet"), row_group_size=3)  # row groups of 3 and 1
with_images(cells[:1] + [{"bytes": None, "path": None}] + cells[2:], name="bad_null.parquet")
with_images(cells, mask=[True, False, False, False], name="bad_struct_null.parquet")
with_images(cells[:1] + [{"bytes": b"this is not an image", "path": "x.png"}] + cells[2:], name="bad_bytes.parquet")

with open(os.path.join(HERE, "bad_missing.jsonl"), "w") as f:
    f.write(json.dumps({"image": "img/red.png", "label": 0}) + "\n")
    f.write(json.dumps({"image": {"bytes": None, "path": "img/missing.png"}, "label": 1}) + "\n")
with open(os.path.join(HERE, "bad_bytes.jsonl"), "w") as f:
    f.write(json.dumps({"image": {"bytes": "iVBORw0KGgo=", "path": None}, "label": 0}) + "\n")

#!/usr/bin/env python3
"""run_image_classification.py's recipe in transformers + PyTorch, for examples/image_classify's
end-to-end figures (docs/image_classify.md): image folders, the Trainer, one line of figures.

  image_classify_torch.py --make_model DIR [--hidden 192 --layers 4 --heads 3 --image_size 224 --labels 10]
      writes a random ViTForImageClassification (transformers' own initialisation, seed 0) and
      ViTImageProcessor's preprocessor_config.json at that size into DIR
  image_classify_torch.py --model DIR --train_dir T --validation_dir V [--batch_size 32 --epochs 1
      --learning_rate 5e-5 --workers 2 --threads 2]
      fine-tunes it as run_image_classification.py does with its defaults: torchvision's
      ImageFolder, RandomResizedCrop(size) + RandomHorizontalFlip + ToTensor + Normalize(the
      processor's mean and std) for training, Resize(size) + CenterCrop(size) for validation,
      the Trainer (AdamW, linear schedule, no warm-up, no weight decay) on the CPU, one
      evaluation at the end; prints a JSON line: wall seconds of the training, images/s,
      accuracy, peak RSS (MiB) of the process and of its data workers.

Pins: transformers 5.25.0, torch 2.15.0, torchvision 0.29.2, accelerate (the torch venv).
"""
import argparse
import json
import resource
import time

import numpy as np
import torch
import transformers
from torchvision import datasets as tvd
from torchvision import transforms as T


def make_model(a):
    torch.manual_seed(0)
    cfg = transformers.ViTConfig(hidden_size=a.hidden, num_hidden_layers=a.layers, num_attention_heads=a.heads,
                                 intermediate_size=4 * a.hidden, image_size=a.image_size, patch_size=16,
                                 num_labels=a.labels, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    transformers.ViTForImageClassification(cfg).save_pretrained(a.make_model)
    transformers.ViTImageProcessor(size={"height": a.image_size, "width": a.image_size}).save_pretrained(a.make_model)


class Pairs(torch.utils.data.Dataset):
    """An ImageFolder's (tensor, label) pairs as the Trainer's dict examples."""

    def __init__(self, folder):
        self.folder = folder

    def __len__(self):
        return len(self.folder)

    def __getitem__(self, i):
        x, y = self.folder[i]
        return {"pixel_values": x, "labels": y}


def collate(batch):
    return {"pixel_values": torch.stack([b["pixel_values"] for b in batch]),
            "labels": torch.tensor([b["labels"] for b in batch])}


def train(a):
    torch.set_num_threads(a.threads)
    proc = transformers.AutoImageProcessor.from_pretrained(a.model)
    size = proc.size["shortest_edge"] if "shortest_edge" in proc.size else (proc.size["height"], proc.size["width"])
    norm = T.Normalize(mean=proc.image_mean, std=proc.image_std)
    train_set = Pairs(tvd.ImageFolder(a.train_dir, T.Compose([T.RandomResizedCrop(size), T.RandomHorizontalFlip(), T.ToTensor(), norm])))
    val_set = Pairs(tvd.ImageFolder(a.validation_dir, T.Compose([T.Resize(size), T.CenterCrop(size), T.ToTensor(), norm])))
    model = transformers.AutoModelForImageClassification.from_pretrained(a.model)
    args = transformers.TrainingArguments(output_dir=a.output_dir, per_device_train_batch_size=a.batch_size,
                                          per_device_eval_batch_size=a.batch_size, num_train_epochs=a.epochs,
                                          learning_rate=a.learning_rate, dataloader_num_workers=a.workers,
                                          eval_strategy="no", save_strategy="no", report_to=[], logging_steps=10,
                                          remove_unused_columns=False, use_cpu=True, seed=42)

    def accuracy(p):
        return {"accuracy": float((np.argmax(p.predictions, axis=1) == p.label_ids).mean())}

    trainer = transformers.Trainer(model=model, args=args, train_dataset=train_set, eval_dataset=val_set,
                                   data_collator=collate, compute_metrics=accuracy)
    start = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - start
    acc = trainer.evaluate()["eval_accuracy"]
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    n = len(train_set) * a.epochs
    print(json.dumps({"train_seconds": round(seconds, 1), "images_per_s": round(n / seconds, 2), "accuracy": acc,
                      "peak_rss_mib": round(rss), "worker_peak_rss_mib": round(workers), "torch": torch.__version__,
                      "transformers": transformers.__version__, "threads": a.threads}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--make_model")
    ap.add_argument("--hidden", type=int, default=192)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=3)
    ap.add_argument("--image_size", type=int, default=224)
    ap.add_argument("--labels", type=int, default=10)
    ap.add_argument("--model")
    ap.add_argument("--train_dir")
    ap.add_argument("--validation_dir")
    ap.add_argument("--output_dir", default="/tmp/image_classify_torch")
    ap.add_argument("--batch_size", type=int, default=32)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--learning_rate", type=float, default=5e-5)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    if a.make_model:
        make_model(a)
    else:
        train(a)


if __name__ == "__main__":
    main()

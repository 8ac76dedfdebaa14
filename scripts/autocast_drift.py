"""How far PyTorch's own bf16 autocast moves a family's training record from float32.

Replays the "train" record of a fixtures.json (plain SGD, dropout 0) from the checkpoint it
was made from, once in float32 and once under torch.autocast("cpu", bfloat16), and prints
each run's largest loss difference from the record. The Go tests' bf16 tolerances
(models/*/parity_test.go, TestMixedPrecision) are set from these figures.

    python scripts/autocast_drift.py models/deberta/testdata/fixtures.json models/deberta/testdata/tiny
"""
import json
import sys

import torch
import torch.nn.functional as F
from transformers import AutoModelForSequenceClassification


def replay(folder, record, bf16):
    model = AutoModelForSequenceClassification.from_pretrained(folder).float()
    model.train()  # the records' checkpoints have every dropout rate 0
    opt = torch.optim.SGD(model.parameters(), lr=record["learning_rate"])
    losses = []
    for step in range(len(record["losses"])):
        b = record["batches"][step % len(record["batches"])]
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            logits = model(input_ids=torch.tensor(b["input_ids"]), attention_mask=torch.tensor(b["attention_mask"])).logits
        loss = F.cross_entropy(logits.float(), torch.tensor(b["labels"]))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def main():
    fixtures, folder = sys.argv[1], sys.argv[2]
    record = json.load(open(fixtures))["models"]["tiny"]["train"]
    for bf16 in (False, True):
        losses = replay(folder, record, bf16)
        worst = max(abs(a - b) for a, b in zip(losses, record["losses"]))
        # relative to the record's loss, to at least 0.1, as the Go tests' CheckMixed compares
        rel = max(abs(a - b) / max(abs(b), 0.1) for a, b in zip(losses, record["losses"]))
        print(f"{'bf16' if bf16 else 'fp32'}: largest loss difference from the record {worst:.3g} (relative {rel:.3g}); "
              f"first steps {[round(x, 4) for x in losses[:5]]}")


if __name__ == "__main__":
    main()

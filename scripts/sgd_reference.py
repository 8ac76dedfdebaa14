"""torch.optim.SGD's weights after a few steps with given gradients: the reference of
optim's TestSGDIsTorchs (optim/sgd_test.go), which runs this script in the torch venv
(GOACCEL_TORCH_PYTHON) and also compares with the table it printed once, committed there.

Usage: python sgd_reference.py '<json: {"configs": [...], "start": {...}, "grads": [{...}, ...]}>'
Each config is torch.optim.SGD's keyword arguments plus "no_decay": the parameter names in a
second parameter group with weight_decay 0. Prints {"<config index>": {"<name>": [values]}}.
"""
import json
import sys

import torch

spec = json.loads(sys.argv[1])
out = {}
for ci, cfg in enumerate(spec["configs"]):
    cfg = dict(cfg)
    no_decay = set(cfg.pop("no_decay", []))
    params = {n: torch.tensor(v, dtype=torch.float32, requires_grad=True) for n, v in spec["start"].items()}
    groups = [{"params": [p for n, p in params.items() if n not in no_decay]}]
    if no_decay:
        groups.append({"params": [p for n, p in params.items() if n in no_decay], "weight_decay": 0.0})
    opt = torch.optim.SGD(groups, **cfg)
    for step in spec["grads"]:
        opt.zero_grad()
        for n, p in params.items():
            p.grad = torch.tensor(step[n], dtype=torch.float32)
        opt.step()
    out[str(ci)] = {n: p.detach().flatten().tolist() for n, p in params.items()}
print(json.dumps(out))

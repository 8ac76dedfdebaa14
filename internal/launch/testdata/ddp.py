# A small PyTorch DDP job for goaccel launch's tests: the same script under torchrun and under
# goaccel launch must print the same losses. It reads only what both launchers set (RANK,
# WORLD_SIZE, MASTER_ADDR, MASTER_PORT through init_method="env://").
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
model = DDP(torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1)))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data = torch.Generator().manual_seed(1)
x_all = torch.randn(64, 8, generator=data)
y_all = x_all.sum(dim=1, keepdim=True).sin()
per = x_all.shape[0] // world
x, y = x_all[rank * per:(rank + 1) * per], y_all[rank * per:(rank + 1) * per]
for step in range(1, 6):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    mean = loss.detach().clone()
    dist.all_reduce(mean)
    if rank == 0:
        print("step %d loss %.8f" % (step, mean.item() / world), flush=True)
dist.destroy_process_group()
os._exit(0)  # torch 2.15 aborts at teardown in about half the runs, under torchrun too

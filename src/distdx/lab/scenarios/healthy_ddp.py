"""A small, correct DDP training loop. Launch-time scenarios run it with a broken launch setup."""

import datetime
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=float(os.environ.get("LAB_TIMEOUT_S", "30"))))
rank = dist.get_rank()
torch.manual_seed(0)

model = DDP(torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(int(os.environ.get("LAB_STEPS", "5"))):
    loss = torch.nn.functional.mse_loss(model(torch.randn(4, 8)), torch.randn(4, 1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"rank {rank} step {step}: loss {loss.item():.4f}", flush=True)
dist.destroy_process_group()

"""The model's hidden size comes from a per-rank setting, so DDP sees different models on each rank."""

import datetime
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=float(os.environ.get("LAB_TIMEOUT_S", "30"))))
rank = dist.get_rank()
torch.manual_seed(0)

hidden = 32 if rank == 0 else 48  # e.g. read from a config file that differs between nodes
layers = [torch.nn.Linear(16, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 1)]
if rank != 0:
    layers.insert(2, torch.nn.LayerNorm(hidden))  # and an extra layer enabled by a node-local flag
model = torch.nn.Sequential(*layers)
print(f"rank {rank}: model has {sum(p.numel() for p in model.parameters())} parameters", flush=True)
ddp = DDP(model)
print(f"rank {rank}: wrapped in DDP", flush=True)
dist.destroy_process_group()

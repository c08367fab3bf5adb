"""A masked mean loss divides by the number of unmasked tokens; at step LAB_FAULT_STEP rank 1's batch
is fully masked, so its loss is 0/0 = NaN. The training loop's own finiteness check stops the run."""

import datetime
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=float(os.environ.get("LAB_TIMEOUT_S", "30"))))
rank = dist.get_rank()
fault_step = int(os.environ.get("LAB_FAULT_STEP", "3"))
torch.manual_seed(0)

model = DDP(torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(fault_step + 3):
    x, y = torch.randn(4, 8), torch.randn(4, 1)
    mask = torch.ones(4, 1)
    if rank == 1 and step == fault_step:
        mask.zero_()  # every token of this batch is padding
    loss = (((model(x) - y) ** 2) * mask).sum() / mask.sum()
    if not torch.isfinite(loss):
        raise FloatingPointError(f"rank {rank}: loss is {loss.item()} at step {step}")
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"rank {rank} step {step}: loss {loss.item():.4f}", flush=True)
dist.destroy_process_group()

"""A healthy DDP loop in which rank 1 is killed with SIGKILL at step LAB_FAULT_STEP, as the host's
out-of-memory killer or a preemption would: no Python error, just a dead process."""

import datetime
import os
import signal

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
    if rank == 1 and step == fault_step:
        os.kill(os.getpid(), signal.SIGKILL)
    loss = torch.nn.functional.mse_loss(model(torch.randn(4, 8)), torch.randn(4, 1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"rank {rank} step {step}: loss {loss.item():.4f}", flush=True)
dist.destroy_process_group()

"""Rank 1 stops making progress at step LAB_FAULT_STEP: it waits for a data file that only its own
node was supposed to prepare and that never appears. Rank 0 waits in the next all_reduce until the
collective timeout; rank 1 is still waiting for its file when the launcher stops it."""

import datetime
import os
import time

import torch
import torch.distributed as dist

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=float(os.environ.get("LAB_TIMEOUT_S", "30"))))
rank = dist.get_rank()
fault_step = int(os.environ.get("LAB_FAULT_STEP", "2"))
workdir = os.environ.get("LAB_WORKDIR", os.getcwd())

for step in range(fault_step + 3):
    if rank == 1 and step == fault_step:
        shard = os.path.join(workdir, f"prepared-shard-{step}.pt")
        print(f"rank {rank} step {step}: waiting for {shard}", flush=True)
        while not os.path.exists(shard):  # nothing will ever write it
            time.sleep(0.5)
    grad = torch.full((16,), float(step))
    dist.all_reduce(grad)
    print(f"rank {rank} step {step}: grad sum {grad.sum().item():.1f}", flush=True)
dist.destroy_process_group()

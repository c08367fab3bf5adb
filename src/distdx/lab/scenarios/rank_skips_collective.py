"""Rank 1 skips the gradient all_reduce of its last step (its batch was empty), then waits at the
end-of-epoch barrier while rank 0 is still inside the all_reduce: both hang until the timeout."""

import datetime
import os

import torch
import torch.distributed as dist

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=float(os.environ.get("LAB_TIMEOUT_S", "30"))))
rank = dist.get_rank()
steps = 3
for step in range(steps):
    grad = torch.full((16,), float(rank + step))
    batch_is_empty = rank == 1 and step == steps - 1
    if batch_is_empty:
        continue  # the bug: skipping the step skips its collective too
    dist.all_reduce(grad)
    print(f"rank {rank} step {step}: grad sum {grad.sum().item():.1f}", flush=True)
dist.barrier()
print(f"rank {rank}: epoch done", flush=True)
dist.destroy_process_group()

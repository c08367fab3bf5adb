"""A small DDP training loop for a job of two nodes (LAB_NODE names this node). Faults come from the
node's own environment, as they do on real clusters where each node has its own:
LAB_KILL_AT_STEP: this node's first worker is killed with SIGKILL at that step (the node dies);
the model comes from `labmodel`, the node's installed version of a model library (PYTHONPATH)."""

import datetime
import os
import signal

import labmodel
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=float(os.environ.get("LAB_TIMEOUT_S", "30"))))
rank, node = dist.get_rank(), os.environ.get("LAB_NODE", "node?")
kill_at = int(os.environ.get("LAB_KILL_AT_STEP", "-1"))
print(f"{node} rank {rank}: labmodel {labmodel.__version__}, torch {torch.__version__}", flush=True)
torch.manual_seed(0)
model = DDP(labmodel.build(8))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(6):
    if step == kill_at and os.environ.get("LOCAL_RANK") == "0":
        os.kill(os.getpid(), signal.SIGKILL)  # the node's out-of-memory killer, a preemption, a power cut
    loss = torch.nn.functional.mse_loss(model(torch.randn(4, 8)), torch.randn(4, 1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"{node} rank {rank} step {step}: loss {loss.item():.4f}", flush=True)
dist.destroy_process_group()

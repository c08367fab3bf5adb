"""Each rank reads its own data file and the files differ in length (the data set was split by file,
not by sample, and without DistributedSampler or drop_last), so rank 0 has one more batch than rank 1.
Rank 1 finishes the epoch and waits at the barrier while rank 0's DDP backward waits for rank 1's
gradients: a hang until the collective timeout."""

import datetime
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=float(os.environ.get("LAB_TIMEOUT_S", "30"))))
rank = dist.get_rank()
torch.manual_seed(rank)

samples_in_my_file = 12 if rank == 0 else 8
shard = TensorDataset(torch.randn(samples_in_my_file, 8), torch.randn(samples_in_my_file, 1))
loader = DataLoader(shard, batch_size=4)
print(f"rank {rank}: {len(shard)} samples, {len(loader)} batches per epoch", flush=True)

model = DDP(torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step, (x, y) in enumerate(loader):
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"rank {rank} step {step}: loss {loss.item():.4f}", flush=True)
dist.barrier()  # end of epoch
print(f"rank {rank}: epoch done", flush=True)
dist.destroy_process_group()

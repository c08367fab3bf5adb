"""Every rank writes its shard of a torch.distributed.checkpoint; one shard never reaches the
shared checkpoint directory (written to node-local disk, or an interrupted copy), and the resume fails."""

import datetime
import os

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=float(os.environ.get("LAB_TIMEOUT_S", "30"))))
rank, world = dist.get_rank(), dist.get_world_size()
ckpt_dir = os.environ.get("LAB_CHECKPOINT_DIR", os.path.join(os.getcwd(), "checkpoint"))
torch.manual_seed(rank)

# each rank owns a different shard of the optimizer state (as ZeRO does), so every rank writes a file
state = {f"shard_{rank}": torch.randn(64, 64), "step": torch.tensor(100)}
dcp.save(state, checkpoint_id=ckpt_dir)
dist.barrier()
if rank == 0:
    lost = sorted(f for f in os.listdir(ckpt_dir) if f.endswith(".distcp"))[-1]
    os.remove(os.path.join(ckpt_dir, lost))  # the fault: the last rank's shard is lost
    print(f"rank 0: checkpoint files now {sorted(os.listdir(ckpt_dir))}", flush=True)
dist.barrier()

print(f"rank {rank}: resuming from {ckpt_dir}", flush=True)
resumed = {f"shard_{rank}": torch.empty(64, 64), "step": torch.tensor(0)}
dcp.load(resumed, checkpoint_id=ckpt_dir)
print(f"rank {rank}: resumed at step {resumed['step'].item()}", flush=True)
dist.destroy_process_group()

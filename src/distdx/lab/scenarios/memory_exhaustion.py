"""The job runs under an address-space limit (as a container or a `ulimit -v` would set) and the
batch is too large for it: the activation allocation fails on every rank."""

import datetime
import os
import resource

import torch
import torch.distributed as dist


def vm_size_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize in /proc/self/status")


dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=float(os.environ.get("LAB_TIMEOUT_S", "30"))))
rank = dist.get_rank()
headroom = int(os.environ.get("LAB_MEMORY_HEADROOM_MB", "256")) * 2**20
limit = vm_size_bytes() + headroom
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
print(f"rank {rank}: address-space limit {limit // 2**20} MiB", flush=True)

model = torch.nn.Linear(1024, 1024)
for batch_size in (64, 256, 1024, 4096, 16384, 65536):
    activations = model(torch.randn(batch_size, 1024))
    print(f"rank {rank}: batch {batch_size} ok ({activations.numel() * 4 // 2**20} MiB of activations)", flush=True)
dist.destroy_process_group()

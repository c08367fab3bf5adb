"""A fused-kernel helper package is installed on node 0 only; the rank that runs on the other
"node" (a different site directory) cannot import it."""

import os
import sys

local_rank = int(os.environ["LOCAL_RANK"])
node = local_rank % 2  # two simulated nodes on one machine
site = os.path.join(os.environ.get("LAB_WORKDIR", os.getcwd()), f"node{node}-site-packages")
os.makedirs(site, exist_ok=True)
if node == 0:  # setup of the fault: only node 0 got `pip install fused_norm_ext`
    with open(os.path.join(site, "fused_norm_ext.py"), "w") as f:
        f.write("def layer_norm(x):\n    return x\n")
sys.path.insert(0, site)

import datetime  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import fused_norm_ext  # noqa: E402

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=float(os.environ.get("LAB_TIMEOUT_S", "30"))))
x = fused_norm_ext.layer_norm(torch.ones(4))
dist.all_reduce(x)
print(f"rank {dist.get_rank()}: ok", flush=True)
dist.destroy_process_group()

"""fp16 training with DeepSpeed's dynamic loss scaler on inputs that were never normalised: the
half-precision gradients overflow at every scale, the scaler halves the scale each step until it
reaches min_loss_scale and stops the run."""

import datetime
import os

import deepspeed
import torch
import torch.distributed as dist
from deepspeed.runtime.fp16.loss_scaler import DynamicLossScaler
from deepspeed.runtime.utils import has_inf_or_nan

deepspeed.init_distributed(dist_backend="gloo", timeout=datetime.timedelta(seconds=float(os.environ.get("LAB_TIMEOUT_S", "30"))))
rank = dist.get_rank()
torch.manual_seed(0)

model = torch.nn.Linear(64, 1).half()
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
scaler = DynamicLossScaler(init_scale=2**12, scale_window=1000, min_scale=1, delayed_shift=2,
                           consecutive_hysteresis=False, raise_error_at_min_scale=True, dtype=torch.half)
for step in range(100):
    x = torch.rand(8, 64).half() * 255.0  # raw pixel values: the normalisation step was forgotten
    y = torch.rand(8, 1).half()
    loss = ((model(x) - y) ** 2).mean()
    opt.zero_grad()
    scaler.backward(loss)
    overflow = torch.tensor([float(any(has_inf_or_nan(p.grad) for p in model.parameters()))])
    dist.all_reduce(overflow, op=dist.ReduceOp.MAX)  # every rank must skip the same steps
    scaler.update_scale(bool(overflow.item()))
    if overflow.item():
        print(f"rank {rank} step {step}: overflow, loss scale now {scaler.cur_scale}", flush=True)
        continue
    for p in model.parameters():
        p.grad.div_(scaler.cur_scale)
    opt.step()
    print(f"rank {rank} step {step}: loss {loss.item():.4f}", flush=True)
dist.destroy_process_group()

"""A small, unmodified DDP training loop on gloo with one injected fault (FAULT, FAULT_RANK, FAULT_STEP).

FAULT: none | shape | skip | model | uneven | nan | overflow | kill | lag
Knows nothing about distdx: the guard reaches it through `distdx run --guard` or sitecustomize.
"""

import datetime
import os
import signal
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset

FAULT = os.environ.get("FAULT", "none")
FAULT_RANK = int(os.environ.get("FAULT_RANK", "1"))
FAULT_STEP = int(os.environ.get("FAULT_STEP", "3"))
STEPS = int(os.environ.get("STEPS", "8"))
HIDDEN = int(os.environ.get("HIDDEN", "16"))
TIMEOUT_S = float(os.environ.get("PG_TIMEOUT_S", "60"))


def main() -> None:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT_S))
    rank = dist.get_rank()
    faulty = rank == FAULT_RANK
    torch.manual_seed(0)
    hidden = HIDDEN + 4 if FAULT == "model" and faulty else HIDDEN
    model = torch.nn.Sequential(torch.nn.Linear(8, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 1))
    ddp = DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**16) if FAULT == "overflow" else None
    samples = 4 * STEPS + (8 if FAULT == "uneven" and faulty else 0)
    data = TensorDataset(torch.randn(samples, 8, generator=torch.Generator().manual_seed(rank)), torch.randn(samples, 1))
    step = 0
    for epoch in range(2):
        for x, y in DataLoader(data, batch_size=4):
            if faulty and step == FAULT_STEP:
                if FAULT == "nan":
                    x = x * float("nan")
                elif FAULT == "kill":
                    os.kill(os.getpid(), signal.SIGKILL)
                elif FAULT == "lag":
                    time.sleep(3600)
            loss = torch.nn.functional.mse_loss(ddp(x), y)
            if scaler is not None:
                scaler.scale(loss * 1e36).backward()
                scaler.step(opt)
                scaler.update()
            else:
                loss.backward()
                opt.step()
            opt.zero_grad()
            metric = loss.detach().reshape(1, 1).expand(4, 4).clone()
            if FAULT == "shape" and faulty and step == FAULT_STEP:
                metric = torch.zeros(4, 8)
            if not (FAULT == "skip" and faulty and step == FAULT_STEP):
                dist.all_reduce(metric)
            step += 1
            if rank == 0:
                print(f"epoch {epoch} step {step} loss {float(metric[0, 0]) / dist.get_world_size():.4f}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

"""A small, unmodified DDP training loop on gloo with one injected fault (FAULT, FAULT_RANK, FAULT_STEP).

FAULT: none | shape | skip | model | uneven | nan | overflow | kill | lag
     | checkpoint | evaluation (no fault: a legitimately slow step of SLOW_S seconds on the FAULT_RANK
       rank while the others wait in the next collective: a checkpoint saved to a slow file
       system, an evaluation pass) | checkpoint+lag (the slow checkpoint at FAULT_STEP, then a
       real stall, lag, two steps later)
Knows nothing about distdx: the guard reaches it through `distdx run --guard` or sitecustomize.
"""

import datetime
import os
import signal
import tempfile
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
SLOW_S = float(os.environ.get("SLOW_S", "30"))


class SlowFile:
    """A file on a slow network file system: each write answers after SLOW_S / 50 seconds (saving
    this model's state dict takes about 50 writes, so about SLOW_S in all)."""

    def __init__(self) -> None:
        self.f = tempfile.TemporaryFile()

    def write(self, data) -> int:
        time.sleep(SLOW_S / 50)
        return self.f.write(data)

    def flush(self) -> None:
        self.f.flush()


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
            stall_after_save = FAULT == "checkpoint+lag" and step == FAULT_STEP + 2
            if faulty and (step == FAULT_STEP or stall_after_save):
                if FAULT == "nan":
                    x = x * float("nan")
                elif FAULT == "kill":
                    os.kill(os.getpid(), signal.SIGKILL)
                elif FAULT == "lag" or stall_after_save:
                    print(f"rank {rank} step {step}: stalled", flush=True)
                    time.sleep(3600)
                elif FAULT in ("checkpoint", "checkpoint+lag"):
                    print(f"rank {rank} step {step}: saving a checkpoint", flush=True)
                    torch.save(model.state_dict(), SlowFile())
                elif FAULT == "evaluation":
                    print(f"rank {rank} step {step}: evaluating", flush=True)
                    model.eval()
                    with torch.no_grad():
                        end = time.monotonic() + SLOW_S
                        while time.monotonic() < end:
                            model(x)
                            time.sleep(0.05)
                    model.train()
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

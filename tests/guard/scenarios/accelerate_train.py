"""A tiny Hugging Face Accelerate loop on CPU (gloo, under torchrun); FAULT=model makes rank 1's
model wider, FAULT=nan gives rank 1 a NaN loss at step 2. Knows nothing of distdx."""

import os

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset

FAULT = os.environ.get("FAULT", "none")
accelerator = Accelerator(cpu=True)
rank = accelerator.process_index
hidden = 12 if FAULT == "model" and rank == 1 else 8
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
data = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=4)
model, optimizer, data = accelerator.prepare(model, optimizer, data)
for step, (x, y) in enumerate(data):
    loss = torch.nn.functional.mse_loss(model(x), y)
    if FAULT == "nan" and rank == 1 and step == 2:
        loss = loss * float("nan")
    accelerator.backward(loss)
    optimizer.step()
    optimizer.zero_grad()
accelerator.wait_for_everyone()
print(f"rank {rank}: done", flush=True)
accelerator.end_training()

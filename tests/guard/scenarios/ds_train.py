"""A tiny DeepSpeed engine on CPU (gloo); FAULT=model makes rank 1's model wider. Knows nothing of distdx."""

import os

import deepspeed
import torch

FAULT = os.environ.get("FAULT", "none")
rank = int(os.environ.get("RANK", "0"))
hidden = 12 if FAULT == "model" and rank == 1 else 8
model = torch.nn.Sequential(torch.nn.Linear(4, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 1))
config = {
    "train_micro_batch_size_per_gpu": 2,
    "gradient_accumulation_steps": 1,
    "optimizer": {"type": "SGD", "params": {"lr": 0.01}},
}
engine, optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
for step in range(3):
    loss = engine(torch.randn(2, 4)).pow(2).mean()
    engine.backward(loss)
    engine.step()
print(f"rank {rank}: done", flush=True)
torch.distributed.destroy_process_group()

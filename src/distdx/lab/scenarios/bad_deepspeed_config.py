"""deepspeed.initialize with a config whose batch sizes do not fit the world size."""

import os

import deepspeed
import torch

deepspeed.init_distributed(dist_backend="gloo")
config = {
    "train_batch_size": 16,  # written for 4 ranks; the job runs on 2
    "train_micro_batch_size_per_gpu": 4,
    "gradient_accumulation_steps": 1,
    "optimizer": {"type": "SGD", "params": {"lr": 0.01}},
}
model = torch.nn.Linear(8, 1)
engine, optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
print(f"rank {os.environ['RANK']}: engine ready", flush=True)

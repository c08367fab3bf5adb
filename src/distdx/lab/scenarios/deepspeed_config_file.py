"""deepspeed.initialize with the DeepSpeed config file named by LAB_CONFIG, then two training steps."""

import os

import deepspeed
import torch
import torch.distributed as dist

deepspeed.init_distributed(dist_backend="gloo")
model = torch.nn.Linear(8, 1)
engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=os.environ["LAB_CONFIG"])
dtype = next(engine.module.parameters()).dtype  # bf16/fp16 when the config enables them
for step in range(2):
    loss = engine(torch.randn(engine.train_micro_batch_size_per_gpu(), 8, dtype=dtype)).float().pow(2).mean()
    engine.backward(loss)
    engine.step()
print(f"rank {os.environ['RANK']}: trained 2 steps", flush=True)
dist.barrier()
dist.destroy_process_group()

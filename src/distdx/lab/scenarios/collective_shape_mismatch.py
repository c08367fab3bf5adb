"""Each rank sizes a gradient bucket from its own local vocabulary, so the all_reduce shapes differ."""

import datetime
import os

import torch
import torch.distributed as dist

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=float(os.environ.get("LAB_TIMEOUT_S", "30"))))
rank = dist.get_rank()

local_vocab = 1000 + 8 * rank  # each node built its own tokenizer: the vocabularies differ
embedding_grad = torch.ones(local_vocab, 4)
print(f"rank {rank}: all_reduce embedding grad of shape {tuple(embedding_grad.shape)}", flush=True)
dist.all_reduce(embedding_grad)
print(f"rank {rank}: done", flush=True)
dist.destroy_process_group()

"""A tiny PyTorch Lightning fit on CPU (DDP strategy over gloo, under torchrun); FAULT=model makes
rank 1's model wider, FAULT=nan gives rank 1 a NaN loss at step 2. Knows nothing of distdx."""

import os

import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, TensorDataset

FAULT = os.environ.get("FAULT", "none")
RANK = int(os.environ.get("RANK", "0"))


class Tiny(pl.LightningModule):
    def __init__(self):
        super().__init__()
        hidden = 12 if FAULT == "model" and RANK == 1 else 8
        self.net = torch.nn.Sequential(torch.nn.Linear(4, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 1))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.net(x), y)
        if FAULT == "nan" and self.global_rank == 1 and batch_idx == 2:
            loss = loss * float("nan")
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


torch.manual_seed(0)
data = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=4)
trainer = pl.Trainer(accelerator="cpu", devices=2, strategy="ddp", max_epochs=1, logger=False,
                     enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
trainer.fit(Tiny(), data)
print(f"rank {trainer.global_rank}: done", flush=True)

"""A stand-in for a model library as installed on one node (version 1.4): installing two real
versions side by side would make the scenario slow; what matters is that the nodes differ."""

import torch

__version__ = "1.4.0"


def build(inputs: int) -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(inputs, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))

"""The same model library at version 2.0, which renamed ``build`` to ``build_model`` (an API change
between major versions): code written against 1.x fails on a node that has 2.0."""

import torch

__version__ = "2.0.0"


def build_model(inputs: int, norm: bool = True) -> torch.nn.Module:
    layers = [torch.nn.Linear(inputs, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)]
    if norm:
        layers.insert(1, torch.nn.LayerNorm(16))
    return torch.nn.Sequential(*layers)

"""What each rank must agree on before the first step: versions, sizes, environment, config."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from importlib import metadata
from typing import Any

PACKAGES = ("torch", "deepspeed", "transformers", "accelerate", "lightning", "pytorch-lightning",
            "megatron-core", "colossalai", "apex", "flash-attn", "numpy", "triton")
ENV_EXACT = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GLOO_SOCKET_IFNAME",
             "TORCH_DISTRIBUTED_DEBUG", "PYTORCH_CUDA_ALLOC_CONF", "CUDA_DEVICE_MAX_CONNECTIONS",
             "CUBLAS_WORKSPACE_CONFIG", "OMP_NUM_THREADS")
ENV_PREFIXES = ("NCCL_", "TORCH_NCCL_", "DISTDX_GUARD_")
# Arguments that differ per rank by design.
RANK_ARGS = ("--local_rank", "--local-rank")


def _script_digest() -> str:
    path = sys.argv[0] if sys.argv else ""
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()[:12]
    except OSError:
        return "<none>"


def fingerprint(obj: object) -> str:
    """A short stable digest of a config (dict, path to a JSON/YAML file, or any object)."""
    if isinstance(obj, (str, os.PathLike)) and os.path.isfile(obj):
        with open(obj, "rb") as f:
            data = f.read()
    else:
        data = json.dumps(obj, sort_keys=True, default=repr).encode()
    return hashlib.sha256(data).hexdigest()[:12]


def local_facts(world_size: int, backend: str) -> dict[str, str]:
    facts: dict[str, str] = {"version:python": sys.version.split()[0]}
    for name in PACKAGES:
        try:
            facts[f"version:{name}"] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            if torch.cuda.is_available():
                facts["version:nccl"] = ".".join(str(v) for v in torch.cuda.nccl.version())
                facts["version:cuda"] = str(torch.version.cuda)
                facts["size:gpus_visible"] = str(torch.cuda.device_count())
        except Exception:  # noqa: BLE001 - no driver, no NCCL: nothing to compare
            pass
    facts["size:world_size"] = str(world_size)
    facts["size:backend"] = backend
    if "LOCAL_WORLD_SIZE" in os.environ:
        facts["size:local_world_size"] = os.environ["LOCAL_WORLD_SIZE"]
    for key, value in os.environ.items():
        if key in ENV_EXACT or key.startswith(ENV_PREFIXES):
            facts[f"env:{key}"] = value
    if "CUDA_VISIBLE_DEVICES" in os.environ:
        facts["env:CUDA_VISIBLE_DEVICES(count)"] = str(len([d for d in os.environ["CUDA_VISIBLE_DEVICES"].split(",") if d.strip()]))
    argv = []
    skip = False
    for arg in sys.argv[1:]:
        if skip:
            skip = False
            continue
        if arg in RANK_ARGS:
            skip = True
            continue
        if arg.startswith(tuple(a + "=" for a in RANK_ARGS)):
            continue
        argv.append(arg)
    facts["config:script"] = _script_digest()
    facts["config:argv"] = " ".join(argv)
    return facts


def model_signature(model: Any) -> list[list]:
    """``[[name, shape, dtype, requires_grad], ...]`` of every parameter, in registration order."""
    return [
        [name, list(p.shape), str(p.dtype).replace("torch.", ""), bool(p.requires_grad)]
        for name, p in model.named_parameters()
    ]

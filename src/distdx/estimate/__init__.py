"""`distdx estimate`: GPU and host memory of a training or inference run, before it is launched.

Contract
--------
- Input: a model, as a parameter count (:func:`shape_from_params`, dimensions not given are derived
  and listed in ``ModelShape.assumed``) or a Hugging Face ``config.json`` of a llama / mistral /
  qwen2 / qwen3 / gpt2 / gpt_neox / opt model or a mixtral / qwen2_moe / qwen3_moe / deepseek_v3
  mixture of experts (:func:`shape_from_config`, which records the fields it used); and a :class:`Setup`
  (dtype or autocast, optimizer, ZeRO stage, offload, tp/pp/cp/dp/ep, micro batch, sequence length,
  checkpointing, attention kernel, loss) whose parallel sizes come from :func:`resolve_parallel`
  (dp = world size / (tp * pp * cp)).
- Output: an :class:`Estimate` with model states, activations and runtime per GPU kept apart (the
  allocated peak, PyTorch's reserved figure and ``per_gpu`` = what nvidia-smi shows, the figure judged
  against the GPU), each with a low-high range from the uncertain terms of ``terms.yaml``, warnings for
  terms no published measurement backs, host memory (and NVMe) per node, whether it fits in the GPU
  memory stated or detected (through ``distdx.doctor``'s probe), and, when it does not, the cheapest
  configurations that fit (:mod:`~distdx.estimate.suggest`, costs in ``costs.yaml``), each with its figures.
- Model states equal DeepSpeed's ``estimate_zero2_model_states_mem_needs`` /
  ``estimate_zero3_model_states_mem_needs`` on the same inputs (tested against the installed
  deepspeed), which the ``*_all_cold`` functions print; deepspeed is not imported here.
  Activations follow Korthikanti et al. 2022 and per-block counts; every formula is in
  :mod:`~distdx.estimate.formulas` and derived in docs/estimate.md, and benchmarks/bench_estimate.py checks
  the figures against published measurements.
- Bad input (unreadable sizes, a config.json that is not JSON or lacks fields, impossible parallel
  sizes, option combinations DeepSpeed rejects) raises :class:`~distdx.errors.DistdxError`
  (``DX-ESTIMATE-001`` .. ``-005``; ``-006`` for a broken packaged data file). Nothing here prints; no torch
  import.
"""

from distdx.estimate.engine import detect_gpu_memory, estimate
from distdx.estimate.models import Estimate, Figures, ModelShape, Setup, Suggestion
from distdx.estimate.plan import figures, resolve_parallel, validate
from distdx.estimate.shape import shape_from_config, shape_from_params
from distdx.estimate.sizes import parse_bytes, parse_count
from distdx.estimate.suggest import cost_model, suggest

__all__ = ["Estimate", "Figures", "ModelShape", "Setup", "Suggestion", "cost_model", "detect_gpu_memory", "estimate",
           "figures", "parse_bytes", "parse_count", "resolve_parallel", "shape_from_config", "shape_from_params",
           "suggest", "validate"]

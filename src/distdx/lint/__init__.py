"""`distdx lint`: check configs and launch commands before any GPU hour is spent.

Contract
--------
- Input: DeepSpeed JSON configs (also with hjson comments), YAML configs (DeepSpeed-style or Megatron
  ``--yaml-cfg`` style), accelerate config files (YAML or JSON, :mod:`~distdx.lint.accelerate`; the DeepSpeed
  file one names is linted too, as accelerate hands it over), shell launch scripts or a single command (deepspeed, torchrun /
  ``python -m torch.distributed.run``, ``colossalai run``, srun, mpirun, with Megatron-LM arguments), and
  Python scripts that build a Colossal-AI booster plugin. Nothing is executed: scripts are read with a small
  bash expander (:mod:`distdx.lint.shell`) and Python with :mod:`ast`.
- The world size comes from ``LintOptions.world_size`` (``--world-size``), else from the launch command that
  runs the file (a DeepSpeed config named on the command line of a launch script gets that command's
  data-parallel size), else from the one launch command given, else from the hostfile's slots.
- Output: a :class:`LintReport` of :class:`Finding` records. Each finding carries its stable code, severity,
  file, the field (dotted path or ``--flag``) and its value, what is wrong, why it matters, how to fix it,
  the taxonomy symptom / root cause / fix pattern it prevents, and line/column when known.
- Knowledge is data: ``rules.yaml`` (``version: 1``) holds every rule's text and taxonomy nodes;
  ``deepspeed_schema.yaml`` holds DeepSpeed's key schema, derived from the installed DeepSpeed by
  ``tests/lint/gen_deepspeed_schema.py``; ``accelerate_schema.yaml`` what accelerate accepts, derived from the
  installed accelerate by ``tests/lint/gen_accelerate_schema.py``. Python only computes: one module per family of checks
  (:mod:`~distdx.lint.deepspeed`, :mod:`~distdx.lint.megatron`, :mod:`~distdx.lint.colossalai`,
  :mod:`~distdx.lint.launch`, :mod:`~distdx.lint.accelerate`) emits ``Hit`` records keyed by code.
- "auto" values are errors unless ``LintOptions.hf`` (``--hf``) says the config goes through the Hugging Face
  Trainer/Accelerate, which fill them in. lint does not guess this from the file.
- Unusable input (missing, binary, non-UTF-8, huge file, bad hostfile, bad options) raises
  :class:`~distdx.errors.DistdxError`; a file that does not parse is a ``LINT-SYN-001`` finding with line and
  column. No torch or deepspeed import: lint runs anywhere.
"""

from distdx.lint.engine import LintOptions, lint, lint_sources, lint_text
from distdx.lint.models import Finding, LintReport, LintRule
from distdx.lint.rules import lint_rules

__all__ = ["Finding", "LintOptions", "LintReport", "LintRule", "lint", "lint_rules", "lint_sources", "lint_text"]

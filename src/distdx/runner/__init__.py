"""`distdx run`: launch a training job so that its failure can be explained.

Contract
--------
- :func:`plan_run` turns a launcher command (``torchrun ...``, ``python -m torch.distributed.run
  ...``, ``deepspeed ...``, ``python train.py``, or anything else) into a :class:`RunPlan`: the
  same command with per-rank logging switched on where the launcher has it (torchrun:
  ``--log-dir OUT/torchrun --tee 3``; deepspeed: ``--enable_each_rank_log OUT/ranks``) unless the
  user chose their own, and the environment variables it adds. Added variables never override the
  user's and change no behaviour: ``PYTHONFAULTHANDLER=1`` (Python stacks on fatal signals),
  ``PYTHONUNBUFFERED=1``, ``TORCHELASTIC_ERROR_FILE`` (for ``@record``, when no torchrun sets it
  per worker), ``TORCH_FR_BUFFER_SIZE`` and ``TORCH_FR_DUMP_TEMP_FILE`` (NCCL flight recorder;
  their older names for torch < 2.10), and with ``guard=True`` the variables that switch
  :mod:`distdx.guard` on in every Python process of the job (a ``sitecustomize`` on
  ``PYTHONPATH``).
- :func:`execute` runs the plan in its own process group, copies the job's output to the given
  stream and, with a UTC timestamp on each line, to ``OUT/output.log``; forwards SIGINT/SIGTERM to
  the job (a second Ctrl-C sends SIGTERM, a third SIGKILL); returns a :class:`RunResult` with the
  job's exit code (128+N when a signal N ended it), the number of problems the guard reported,
  and, when the job failed or the guard reported a problem, the diagnosis of everything captured
  (combined log, guard events, torchelastic error files).
- Library code: nothing here prints; the CLI (``distdx.cli.run_cmd``) renders.
"""

from distdx.runner.execute import RunResult, execute
from distdx.runner.plan import RunPlan, plan_run

__all__ = ["RunPlan", "RunResult", "execute", "plan_run"]

"""The lab's scenario programs: plain torch.distributed scripts that torchrun runs, never imported.

Each one contains its fault and nothing of distdx, so that `distdx run --guard` can be tested on
unmodified programs. Knobs come from the environment (``LAB_TIMEOUT_S`` for the process group's
collective timeout, ``LAB_FAULT_STEP``, ``LAB_WORKDIR``); see ``../scenarios.yaml``.
"""

"""The fault-injection lab: real distributed failures, reproduced on demand on CPU.

Contract: the catalogue (``scenarios.yaml``, loaded by :func:`load_scenarios`) lists scenarios as
data, each a small plain torch.distributed program in ``scenarios/`` that torchrun runs with gloo
on 2-4 local ranks (one node, or two nodes: two torchrun agents on this machine meeting at a c10d
rendezvous on 127.0.0.1, each with its own environment, their outputs merged with a ``nodeN: ``
prefix per line) and that fails in one known way, labelled with the taxonomy symptom, root cause
and fix pattern it reproduces. :func:`run_scenario` runs one, bounded in time (the program's own
collective timeout inside, the scenario's bound outside, then every process of the run is killed),
keeps or removes its work directory, and returns a :class:`LabRun`: exit code, duration, log paths,
whether it failed as expected (non-zero exit within the bound, every expected log line present),
and the diagnosis of its combined log. Programs never import distdx, so `distdx run --guard` can
be tested on them unmodified: pass ``extra_env`` and a ``wrapper`` command to run them under it.
Library code never prints; `distdx lab list | run NAME` is the CLI.
"""

from distdx.lab.catalogue import Scenario, get_scenario, load_scenarios, program_path
from distdx.lab.runner import LabRun, launch_command, launch_env, run_scenario

__all__ = [
    "LabRun",
    "Scenario",
    "get_scenario",
    "launch_command",
    "launch_env",
    "load_scenarios",
    "program_path",
    "run_scenario",
]

"""`distdx doctor`: check a machine (or every node, or every rank of a job) before GPU hours are spent.

Contract:

- The catalogue is data: ``checks.yaml`` (``version: 1``) lists every check with a stable code
  (``DOC-<AREA>-NNN``, never reused), a title, a severity, the taxonomy nodes it prevents
  (symptom, root cause, fix pattern, IDs of the study's taxonomy), why it matters, the fix and
  references. ``compat.yaml`` holds the version tables (driver minimums per CUDA, nvcc's newest
  gcc, NCCL's variable names and values), each with its source.
- Facts and verdicts are separate. :func:`distdx.doctor.probe.probe` reads the machine into a
  frozen :class:`~distdx.doctor.models.Environment` (bounded subprocesses, no torch import);
  one function per code in :mod:`distdx.doctor.checks` judges it and returns pass / warn /
  fail / skip with a message. Checks never touch the machine, so each is tested with injected
  readings, one that trips it and one that passes.
- :func:`~distdx.doctor.engine.doctor` returns a :class:`~distdx.doctor.models.DoctorReport`
  of typed :class:`~distdx.doctor.models.CheckResult` records; it never prints. A report is
  failed when any check fails.
- Version sets: :func:`distdx.doctor.versionsets.version_set` answers which versions of the
  packages in question fit what is installed and the errors of a log, from ``compat.yaml``
  ``version_rules``, the generated ``compat_releases.yaml`` and ``api_history.json.gz``, as a pip
  constraints file with a reason and a source per line; what the table cannot answer is "unknown".
- Multi-node: :func:`~distdx.doctor.hostfile.parse_hostfile` reads DeepSpeed/pdsh and MPI
  hostfiles; :mod:`distdx.doctor.remote` checks SSH reachability non-interactively, runs the
  doctor on each node and :func:`~distdx.doctor.compare.compare_reports` names what differs.
- In a launched job (``--distributed``), :mod:`distdx.doctor.distributed` runs the checks on
  every rank plus a collective smoke test, gathers the reports to rank 0 and names the odd rank.
"""

from distdx.doctor.checks import CheckOptions
from distdx.doctor.engine import doctor, run_checks, select
from distdx.doctor.hostfile import HostEntry, parse_hostfile
from distdx.doctor.models import CheckResult, CheckSpec, DoctorReport, Environment, GpuReading

__all__ = ["CheckOptions", "CheckResult", "CheckSpec", "DoctorReport", "Environment", "GpuReading", "HostEntry",
           "doctor", "parse_hostfile", "run_checks", "select"]

"""`distdx fix`: from what lint reports to the repaired config, script or command.

Contract
--------
- Input: the files lint reads (DeepSpeed JSON and the hjson DeepSpeed accepts, Megatron-LM / torchrun /
  deepspeed launch scripts, Colossal-AI Python scripts), linted together with the same
  :class:`~distdx.lint.LintOptions`.
- Each lint rule states its fix kind in ``distdx/lint/rules.yaml`` (``fix_kind``): *safe* fixes leave the
  meaning unchanged except the error, *unsafe* ones change behaviour or pick a value and are applied only
  with ``FixOptions(unsafe=True)``, *none* means a person chooses. The fixers (:mod:`~distdx.fix.fixers`,
  one per code) turn a finding into :class:`Edit` records, character spans of the file: JSON edits
  touch one member (value, key, or the member with its comma), shell edits one flag or one ``VAR=``
  assignment, Python edits one keyword argument, so formatting, key order and comments stay.
- :func:`fix` lints, applies, lints again, to a fixed point (:mod:`~distdx.fix.engine`); the result, a
  :class:`FixReport`, holds per file the text before and after, the fixes applied and left out, and the
  error codes still reported. Nothing is written: :func:`write_fixed` writes one file atomically
  (:func:`distdx.paths.write_atomic`), keeps a backup, and refuses when the file changed since it was read.
- :func:`~distdx.fix.fromlog.fixes_from_log` turns a diagnosis into repairs (F1, F3, F4, F5, F6).
- The library never prints.
"""

from distdx.fix.engine import FixOptions, apply_edits, fix, fix_sources, write_fixed
from distdx.fix.models import Edit, FileFix, Fix, FixReport

__all__ = ["Edit", "FileFix", "Fix", "FixOptions", "FixReport", "apply_edits", "fix", "fix_sources", "write_fixed"]

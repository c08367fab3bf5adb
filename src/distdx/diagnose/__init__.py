"""Diagnosis: parsed logs or issue text in, ranked hypotheses out.

Contract: :func:`diagnose` takes a :class:`~distdx.logs.ParsedLog` and returns a
:class:`Diagnosis` holding, for each of stage, symptom, root cause and fix pattern, a ranked list
of ``(id, score)`` best first, the first failure, the evidence (rule hits with rank, file, line),
fix steps and similar known issues. Deterministic and offline; it never prints.
"""

from distdx.diagnose.engine import diagnose, diagnose_files, diagnose_text
from distdx.diagnose.models import Diagnosis, Evidence, Fix, Hypothesis, SimilarIssue

__all__ = ["Diagnosis", "Evidence", "Fix", "Hypothesis", "SimilarIssue", "diagnose", "diagnose_files", "diagnose_text"]

"""Knowledge as data: the taxonomy, signature rules and known issues.

Contract:

- :func:`taxonomy` returns the study's taxonomy (``taxonomy.yaml``), whose IDs are public
  and never change: stages ``S1``..``S5``, symptoms ``"1.1"``..``"5.11"``, root causes
  ``R1.1``..``R5.6``, fix patterns ``F1``..``F6``, and ``unknown``.
- :func:`load_rules` returns the signature rules (``rules/*.yaml``), each with a stable code
  (``DX-<AREA>-NNN``), patterns, weighted taxonomy targets, why, fix steps,
  references and fixtures that must and must not match.
- :func:`load_known_issues` returns the known-issue index used for "similar known issues"
  and by the text model of the diagnosis engine.

Everything here is loaded once and cached; loading never touches the network.
"""

from distdx.knowledge.taxonomy import Taxonomy, TaxonomyNode, taxonomy
from distdx.knowledge.rules import Rule, load_rules
from distdx.knowledge.known_issues import KnownIssue, load_known_issues

__all__ = [
    "KnownIssue",
    "Rule",
    "Taxonomy",
    "TaxonomyNode",
    "load_known_issues",
    "load_rules",
    "taxonomy",
]

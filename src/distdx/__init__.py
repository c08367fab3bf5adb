"""distdx: the tool to reach for when a distributed deep-learning job breaks.

Capabilities, one subpackage each:

- ``distdx.logs``: read real logs (files, directories, globs, stdin, .gz) into per-rank
  streams, tracebacks, error blocks and launcher summaries, and find the first failure.
- ``distdx.knowledge``: the taxonomy of the study (stages S1..S5, symptoms "1.1".."5.11",
  root causes R1.1..R5.6, fix patterns F1..F6), signature rules and known issues, all as
  versioned data files.
- ``distdx.diagnose``: the engine that turns parsed logs into ranked hypotheses.
- ``distdx.report``: renderers (text, JSON, Markdown) and redaction.
- ``distdx.doctor``, ``distdx.lint``, ``distdx.estimate``: prevention before launch.
- ``distdx.guard``, ``distdx.lab``: runtime detection and fault-injection scenarios.
- ``distdx.study``: mining, annotation and analysis of bug issues.
- ``distdx.cli``: the thin command-line layer; the only place that prints.

Library code never prints and never imports torch at module import time.
"""

__version__ = "0.1.0"

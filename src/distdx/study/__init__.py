"""The study, packaged: mine GitHub issues, select, annotate, measure agreement, adjudicate, report.

It reruns the method of "A Comprehensive Study of Bugs in Modern Distributed Deep Learning
Systems" (849 issues of DeepSpeed, Megatron-LM and Colossal-AI) on any repository, and its
adjudicated output feeds the known-issue index of ``distdx diagnose`` (``distdx kb build``).

Contract:

- :mod:`~distdx.study.store` keeps everything in one SQLAlchemy database (SQLite from a path by
  default, any SQLAlchemy URL otherwise) with a ``schema_version`` table and ordered migrations.
  Writes are upserts inside transactions, so a repeated or resumed run never duplicates a row.
- :func:`~distdx.study.mine.mine` walks a repository's issues through the GitHub REST API
  (:class:`~distdx.study.github.GitHubClient`: Link pagination, ETag conditional requests,
  primary and secondary rate limits honoured by waiting, exponential backoff on 5xx). The
  listing cursor and each issue's timeline are committed atomically, so an interrupted run
  resumes where it stopped. Waiting and time are injected (``sleep``, ``clock``).
- :func:`~distdx.study.select.select` applies the study's criteria as named, composable filters
  and returns the funnel: how many issues are left after each step.
- :mod:`~distdx.study.annotate` runs the blind terminal labelling and adjudication sessions
  (input and output injected, one save per issue); :mod:`~distdx.study.labelio` reads and
  writes labels as CSV, case-format JSONL and Label Studio JSON.
- :func:`~distdx.study.agreement.agreement` gives Cohen's kappa per dimension for two
  annotators, Fleiss' kappa for three or more, and the disagreements;
  :func:`~distdx.study.agreement.saturation` counts the categories each round added.
- :func:`~distdx.study.report.analyse` counts what the study's figures show and
  :func:`~distdx.study.report.write_report` writes them as a self-contained HTML page.

Library functions return frozen dataclasses and never print; httpx, SQLAlchemy and matplotlib
are imported only when a function needs them (``pip install distdx[study]``).
"""

from distdx.study.records import DIMENSIONS, LabelSet, LabelledIssue

__all__ = ["DIMENSIONS", "LabelSet", "LabelledIssue"]

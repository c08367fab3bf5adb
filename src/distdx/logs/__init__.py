"""Log ingestion: real logs in, per-rank lines, error blocks and the first failure out.

Contract: :func:`read_logs` takes paths, directories, globs or ``-`` (stdin), streams them in
bounded memory, and returns a :class:`ParsedLog`; :func:`parse_text` does the same for a string.
Nothing here prints; unusable input raises :class:`distdx.errors.DistdxError`.
"""

from distdx.logs.models import Block, FirstFailure, Frame, LogLine, ParsedLog

__all__ = ["Block", "FirstFailure", "Frame", "LogLine", "ParsedLog"]

"""Log ingestion: real logs in, per-rank lines, error blocks and the first failure out.

Contract: :func:`read_logs` takes paths, directories (recursive), globs, ``-`` (stdin) and
compressed files (.gz, .bz2, .xz), streams them in bounded memory, and returns a
:class:`ParsedLog`; :func:`parse_text` does the same for a string.

- Small inputs keep every line; large ones keep only salient lines (errors, tracebacks, launcher
  summaries, NCCL WARN, warnings) and a little context, and say so with ``complete=False``.
- Each line loses its launcher prefix (torchrun ``[rank3]:``/``[default0]:``, pdsh ``host: ``,
  ``srun -l`` ``3: ``, mpirun ``[1,3]<stderr>:``), ANSI codes and tqdm redraws, and is attributed
  to a rank and host (also from ``[Rank 3]`` in the text or from per-rank file names).
- :class:`Block` records rebuild tracebacks (chained too), C++/NCCL errors, compiler errors,
  launcher exits and torchelastic failure tables/error files.
- :class:`FirstFailure` is the earliest real error, apart from its cascade on other ranks
  (``distdx/cascade.yaml``), with the reason it was chosen.
- distdx guard events (JSON lines with an integer ``"distdx"`` key) become lines reading
  ``[distdx-guard] <message>`` with the event attached (``LogLine.event``, ``ParsedLog.events``).

Nothing here prints; unusable input raises :class:`distdx.errors.DistdxError` (codes
``DX-LOGS-0NN``); smaller problems (one unreadable file among many, invalid UTF-8, cut lines)
become ``ParsedLog.notes``.
"""

from distdx.logs.api import parse_text, read_logs
from distdx.events import GuardEvent
from distdx.logs.models import Block, ExitRecord, FirstFailure, Frame, LogLine, ParsedLog

__all__ = [
    "Block",
    "ExitRecord",
    "FirstFailure",
    "Frame",
    "GuardEvent",
    "LogLine",
    "ParsedLog",
    "parse_text",
    "read_logs",
]

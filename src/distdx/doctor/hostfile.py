"""Hostfiles of the DeepSpeed/pdsh launcher and of MPI, parsed into typed entries.

Accepted lines (``#`` starts a comment, blank lines are skipped):

- DeepSpeed/pdsh: ``worker-1 slots=8`` (DeepSpeed's own parser matches ``^(\\S+)\\s+slots=(\\d+)``
  and rejects a host listed twice);
- Open MPI: ``worker-1 slots=8 max_slots=16`` (also ``max-slots``), or a bare ``worker-1``
  (one slot);
- MPICH/Hydra: ``worker-1:8``.

``dialect="deepspeed"`` accepts only what DeepSpeed's launcher accepts, so a file that would
stop ``deepspeed --hostfile`` is reported here, with the line and column, before launch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from distdx.errors import DistdxError

DIALECTS = ("any", "deepspeed", "mpi")
_HOST_RE = re.compile(r"^[A-Za-z0-9_.\-@\[\]]+$")
_BAD_HOST_CHAR = re.compile(r"[^A-Za-z0-9_.\-@\[\]]")
_SLOT_KEYS = {"slots": "slots", "max_slots": "max_slots", "max-slots": "max_slots"}


@dataclass(frozen=True)
class HostEntry:
    host: str
    slots: int
    line: int
    max_slots: int | None = None


def _error(source: str, line: int, column: int, what: str, hint: str) -> DistdxError:
    return DistdxError(
        "DX-HOSTFILE-001",
        f"{source}:{line}:{column}: {what}",
        why="launchers (deepspeed, pdsh, mpirun) refuse a hostfile they cannot parse, after the job was queued",
        hint=hint,
    )


def _positive_int(source: str, lineno: int, column: int, key: str, value: str) -> int:
    if not re.fullmatch(r"[0-9]{1,9}", value) or int(value) < 1:  # ASCII only: `slots=²` is not a number
        raise _error(source, lineno, column, f"{key} must be a whole number >= 1, got {value!r}",
                     f"write e.g. `{key}=8`")
    return int(value)


def parse_hostfile(text: str, source: str = "<hostfile>", dialect: str = "any") -> list[HostEntry]:
    """Parse a hostfile; raise :class:`DistdxError` naming line, column and what is wrong."""
    if dialect not in DIALECTS:
        raise DistdxError("DX-HOSTFILE-002", f"unknown hostfile dialect {dialect!r}",
                          hint=f"use one of: {', '.join(DIALECTS)}")
    if "\x00" in text:
        raise _error(source, 1, 1, "the file contains NUL bytes; it is not a text hostfile",
                     "pass the plain-text hostfile (one `host slots=N` per line)")
    entries: list[HostEntry] = []
    seen: dict[str, int] = {}
    for lineno, raw in enumerate(text.splitlines(), start=1):
        body = raw.split("#", 1)[0]
        if not body.strip():
            continue
        tokens = [(m.start() + 1, m.group(0)) for m in re.finditer(r"\S+", body)]
        col, host = tokens[0]
        slots: int | None = None
        max_slots: int | None = None
        if ":" in host and not host.startswith("["):
            if dialect == "deepspeed":
                raise _error(source, lineno, col + host.index(":"), f"`{host}` uses the MPICH `host:N` form",
                             "DeepSpeed's launcher wants `host slots=N`")
            host, _, count = host.partition(":")
            slots = _positive_int(source, lineno, col + len(host) + 1, "slot count", count)
        if host.startswith("-"):  # ssh and pdsh would read it as an option (`-oProxyCommand...`)
            raise _error(source, lineno, col, f"bad host name {host!r}: it starts with `-`",
                         "a host name never starts with `-`; ssh would take it as an option. Write the node's name")
        if not host or not _HOST_RE.match(host):
            bad = _BAD_HOST_CHAR.search(host)
            offset = bad.start() if bad else 0
            raise _error(source, lineno, col + offset, f"bad host name {host!r}",
                         "a host is a name or address without spaces, quotes or `=`; start the line with it")
        for tcol, token in tokens[1:]:
            key, eq, value = token.partition("=")
            if not eq or key not in _SLOT_KEYS:
                raise _error(source, lineno, tcol, f"unexpected {token!r} after host {host!r}",
                             "only `slots=N` (and for MPI `max_slots=M`) may follow the host")
            name = _SLOT_KEYS[key]
            if name == "max_slots" and dialect == "deepspeed":
                raise _error(source, lineno, tcol, "`max_slots` is an MPI setting DeepSpeed does not accept",
                             "DeepSpeed's launcher wants exactly `host slots=N`")
            number = _positive_int(source, lineno, tcol + len(key) + 1, key, value)
            if name == "slots":
                if slots is not None:
                    raise _error(source, lineno, tcol, "slots given twice", "keep one `slots=N`")
                slots = number
            else:
                max_slots = number
        if dialect == "deepspeed" and (len(tokens) < 2 or not tokens[1][1].startswith("slots=")):
            raise _error(source, lineno, col + len(host), f"host {host!r} has no `slots=N` right after it",
                         "DeepSpeed's launcher wants `host slots=N` (its bad-entry error stops the launch)")
        if slots is None:
            slots = 1  # Open MPI's reading of a bare host name
        if max_slots is not None and max_slots < slots:
            raise _error(source, lineno, col, f"max_slots={max_slots} is below slots={slots}",
                         "max_slots is the upper bound; make it >= slots")
        if host in seen:
            raise _error(source, lineno, col, f"host {host!r} is listed again (first on line {seen[host]})",
                         "list each host once with its total slot count (DeepSpeed refuses duplicates)")
        seen[host] = lineno
        entries.append(HostEntry(host=host, slots=slots, line=lineno, max_slots=max_slots))
    if not entries:
        raise _error(source, 1, 1, "no hosts in the hostfile",
                     "write one line per node: `worker-1 slots=8`")
    return entries

"""The known-issue index: real, labelled issues that diagnosis cites as "similar known issues".

Stored as ``data/known_issues.jsonl`` in the package, one :class:`KnownIssue` per line, built
by ``corpus/build.sh`` (``distdx kb build``) from labelled issues in the case format of
``shared/cases`` (our own summaries, error strings, URL and labels; never the issue's prose).
A user's own index (``distdx kb build`` writes it to :func:`user_index_path` unless told ``--out``)
is read after the bundled one; where both have an issue, the user's entry wins.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path

from distdx import jsonio
from distdx.errors import DistdxError
from distdx.knowledge.taxonomy import DIMENSIONS, UNKNOWN, taxonomy

INDEX_VERSION = 1
MAX_ERROR_CHARS = 4000


@dataclass(frozen=True)
class KnownIssue:
    id: str
    url: str
    framework: str
    title: str
    summary: str  # what the user ran and saw, in our words
    errors: str  # the machine output (error strings, tracebacks), trimmed
    labels: dict[str, str]  # stage, symptom, root_cause, fix_pattern -> ID or "unknown"
    resolution: str = ""
    distributed_specific: bool | None = None
    fingerprint: str = ""  # of the text a user would paste: summary, blank line, errors
    source: str = ""
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return f"{self.summary}\n\n{self.errors}"


def fingerprint(text: str) -> str:
    """A whitespace-insensitive hash of a pasted text: equal texts are the same report."""
    normal = re.sub(r"\s+", " ", text).strip().lower()
    return hashlib.sha256(normal.encode("utf-8", "replace")).hexdigest()[:16]


def _bad_case(path: str, lineno: int, what: str) -> DistdxError:
    return DistdxError(
        "DX-KB-002",
        f"{path}:{lineno}: {what}",
        why="a known issue needs an id, a url and labels that are taxonomy IDs",
        hint="each line must be one JSON object in the case format (see shared/cases/CASES.md)",
    )


def issue_from_case(case: dict, source: str = "", where: tuple[str, int] = ("<case>", 0)) -> KnownIssue:
    tax = taxonomy()
    labels_in = case.get("labels")
    if not isinstance(labels_in, dict) or not case.get("id") or not case.get("url"):
        raise _bad_case(*where, "missing id, url or labels")
    labels: dict[str, str] = {}
    for dim in DIMENSIONS:
        value = str(labels_in.get(dim, UNKNOWN))
        if value != UNKNOWN and (value not in tax or tax.nodes[value].dimension != dim):
            raise _bad_case(*where, f"label {dim}={value!r} is not a {dim} ID")
        labels[dim] = value
    summary = str(case.get("context") or "").strip()
    errors = str(case.get("log") or "")
    return KnownIssue(
        id=str(case["id"]),
        url=str(case["url"]),
        framework=str(case.get("framework") or ""),
        title=str(case.get("title") or ""),
        summary=summary,
        errors=errors[:MAX_ERROR_CHARS],
        labels=labels,
        resolution=str(case.get("resolution") or ""),
        distributed_specific=labels_in.get("distributed_specific"),
        fingerprint=fingerprint(f"{summary}\n\n{errors}"),
        source=source,
    )


def read_cases(path: str | Path) -> list[dict]:
    """Read a case-format JSONL file, with errors that name the line."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise DistdxError("DX-KB-003", f"cannot read {path}: {e.strerror}",
                          hint="check the path and its permissions") from None
    cases = []
    for lineno, line in enumerate(raw.decode("utf-8", "replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = jsonio.loads(line)
        except json.JSONDecodeError as e:
            raise _bad_case(str(path), lineno, f"not JSON ({e.msg} at column {e.colno})") from None
        if not isinstance(obj, dict):
            raise _bad_case(str(path), lineno, "not a JSON object")
        cases.append(obj)
    return cases


def index_text(issues: list[KnownIssue]) -> str:
    """The index file's text: a header line, then one JSON object per issue (sorted keys, so that the
    same issues give the same bytes)."""
    lines = [json.dumps({"index_version": INDEX_VERSION, "count": len(issues)})]
    lines += [json.dumps(asdict(issue), ensure_ascii=False, sort_keys=True) for issue in issues]
    return "\n".join(lines) + "\n"


def parse_index(text: str) -> tuple[KnownIssue, ...]:
    lines = [l for l in text.splitlines() if l.strip()]
    if not lines:
        return ()
    header = jsonio.loads(lines[0])
    if header.get("index_version") != INDEX_VERSION:
        raise DistdxError("DX-KB-004", "known-issue index has an unsupported version",
                          hint="rebuild it with `distdx kb build`", exit_code=3)
    return tuple(KnownIssue(**jsonio.loads(l)) for l in lines[1:])


def user_index_path() -> Path:
    """Where a user's own index lives: ``$DISTDX_INDEX``, else ``$XDG_DATA_HOME/distdx/known_issues.jsonl``
    (``~/.local/share/distdx/known_issues.jsonl``)."""
    import os

    from distdx.paths import user_dir

    override = os.environ.get("DISTDX_INDEX")
    return Path(override) if override else user_dir("data") / "known_issues.jsonl"


def index_texts() -> tuple[str, str]:
    """(bundled index, user index) as text; '' for one that does not exist."""
    entry = resources.files("distdx.knowledge").joinpath("data", "known_issues.jsonl")
    bundled = entry.read_text(encoding="utf-8") if entry.is_file() else ""
    user = user_index_path()
    try:
        mine = user.read_text(encoding="utf-8") if user.is_file() else ""
    except (OSError, UnicodeDecodeError) as e:
        raise DistdxError("DX-KB-006", f"cannot read the known-issue index {user}: {e}",
                          hint="rebuild it with `distdx kb build --force`, or unset DISTDX_INDEX") from None
    return bundled, mine


@lru_cache(maxsize=1)
def load_known_issues() -> tuple[KnownIssue, ...]:
    bundled, mine = index_texts()
    issues = {i.id: i for i in parse_index(bundled)}
    issues.update((i.id, i) for i in parse_index(mine))
    return tuple(issues.values())

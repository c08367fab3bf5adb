"""What every catalogue of stable codes shares: signature rules (``DX-*``, ``knowledge/rules``),
doctor checks (``DOC-*``, ``doctor/checks.yaml``), lint rules (``LINT-*``, ``lint/rules.yaml``) and
lab scenarios (``lab/scenarios.yaml``).

Each catalogue is a bundled YAML file with ``version: 1`` and a list of entries; each entry has a
stable code (never changed, never reused), a title, a severity, taxonomy targets, what it means,
why, how to fix it and references. The kinds differ only in what they match (log lines, machine
facts, config keys, a program to run). This module holds the parts they share, so that the four
loaders validate them the same way and report a broken entry with one kind of error:

- :data:`SEVERITIES` and :data:`STATUSES`;
- :class:`Reference` and :func:`references`;
- :func:`entries`: the file's entries after the ``version``/list check;
- :func:`severity_of`: one of :data:`SEVERITIES`;
- :func:`taxonomy_target`: one taxonomy ID of a given dimension;
- :func:`fix_steps`: ``fix``, one instruction or a list of steps, as steps;
- :func:`lifecycle`: ``status`` (stable, preview, deprecated; stable when absent) and ``since`` (the
  distdx release that introduced the entry; absent on entries older than the field);
- :func:`catalogue_error`: the error for a broken entry (each catalogue keeps its own error code).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from distdx.errors import EXIT_INTERNAL, DistdxError
from distdx.events import SEVERITIES
from distdx import yamlio
from distdx.yamlio import load_yaml

STATUSES = ("stable", "preview", "deprecated")

__all__ = ["SEVERITIES", "STATUSES", "Reference", "catalogue_error", "entries", "fix_steps", "lifecycle",
           "references", "severity_of", "taxonomy_target", "words"]


@dataclass(frozen=True)
class Reference:
    """A source behind an entry: an issue, a document, a line of a framework's source."""

    url: str
    title: str = ""


def catalogue_error(code: str, data_file: str, entry: str, what: str, *, needs: str = "") -> DistdxError:
    """A broken catalogue entry: bundled data is validated when loaded, so a broken entry never
    silently stops working. ``code`` is the catalogue's own error code (``DX-KB-001``...);
    ``needs`` says what an entry of that catalogue must have."""
    return DistdxError(
        code,
        f"invalid entry {entry or '?'} in {data_file}: {what}",
        why="the catalogues of stable codes are versioned data, validated when loaded so that a broken "
            "entry never silently stops working",
        hint=f"fix the entry in {data_file}" + (f" ({needs})" if needs else "")
             + "; CONTRIBUTING.md shows each kind of entry, and its tests run every fixture",
        exit_code=EXIT_INTERNAL,
    )


def entries(text: str, list_key: str, *, code: str, data_file: str, version: int = 1) -> list:
    """The entries of a catalogue file: a mapping with ``version`` and a list under ``list_key``."""
    try:
        data = load_yaml(text)
    except yamlio.YAMLError as e:  # evaluated only when loading failed: PyYAML is imported by then
        raise catalogue_error(code, data_file, "", f"the YAML does not parse: {e}") from None
    if not isinstance(data, dict) or data.get("version") != version or not isinstance(data.get(list_key), list):
        raise catalogue_error(code, data_file, "", f"the file is a mapping with `version: {version}` and a list "
                                                   f"`{list_key}`")
    return data[list_key]


def references(raw: object, *, code: str, data_file: str, entry: str) -> tuple[Reference, ...]:
    """``references:`` as a list of ``{url, title}`` mappings or bare URLs."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise catalogue_error(code, data_file, entry, "references must be a list of {url, title} or URLs")
    out = []
    for r in raw:
        if isinstance(r, dict) and r.get("url"):
            out.append(Reference(url=str(r["url"]), title=str(r.get("title", ""))))
        elif isinstance(r, str) and r:
            out.append(Reference(url=r))
        else:
            raise catalogue_error(code, data_file, entry, f"a reference has no url: {r!r}")
    return tuple(out)


def severity_of(value: object, *, code: str, data_file: str, entry: str) -> str:
    """``value`` as one of :data:`SEVERITIES` (error, warning, info)."""
    if value not in SEVERITIES:
        raise catalogue_error(code, data_file, entry, f"severity must be one of {SEVERITIES}")
    return str(value)


def taxonomy_target(value: object, dimension: str, *, code: str, data_file: str, entry: str, key: str) -> str:
    """``value`` as a taxonomy ID of ``dimension`` (stage, symptom, root_cause, fix_pattern)."""
    from distdx.knowledge.taxonomy import taxonomy

    tax = taxonomy()
    node = str(value)
    if node not in tax or tax.nodes[node].dimension != dimension:
        raise catalogue_error(code, data_file, entry, f"{key} {node!r} is not a {dimension} ID of the taxonomy")
    return node


def lifecycle(spec: dict, *, code: str, data_file: str, entry: str) -> tuple[str, str]:
    """``(status, since)`` of an entry: a code that stops being useful is deprecated, never removed
    or reused; ``since`` is a release number such as ``0.2.0``."""
    status = spec.get("status", "stable")
    if status not in STATUSES:
        raise catalogue_error(code, data_file, entry, f"status must be one of {STATUSES}")
    since = str(spec.get("since") or "")
    if since and not re.fullmatch(r"\d+\.\d+(\.\d+)?", since):
        raise catalogue_error(code, data_file, entry, f"since {since!r} is not a release number such as 0.2.0")
    return status, since


def fix_steps(raw: object) -> tuple[str, ...]:
    """``fix:`` as steps: every catalogue takes one instruction (a string) or a list of steps. Doctor
    checks and lint rules show their steps as one paragraph, signature rules and lab scenarios as a list."""
    return tuple(str(s).strip() for s in (raw if isinstance(raw, list) else [raw]) if str(s).strip())


def words(text: object) -> str:
    """Prose of an entry with its YAML line breaks folded into single spaces."""
    return " ".join(str(text).split())
